import type { Loaded } from '../cache/content-cache'
import type { ContentAnswer, SyncEnvelope } from '../content/content-answer'
import { encodeQueryValue, listsTag, render, typeTag } from '../content/content-answer'
import { toItem } from '../content/map-item'
import type { Sql } from '../db/connect'
import type { ModelPart } from '../hooks/extension'
import { contentTypeNotFound } from '../http/errors'
import { readSyncPage, type SyncPage } from './sync-statement'
import { encodeSyncToken, expiredToken, invalidToken, type SyncToken } from './sync-token'

export interface SyncAnswerOptions {
  sql: Sql
  mediaBaseUrl: string
  publicUrl: string
  /** Callbacks are registered: load each entry's model with these parts (C54) and keep the rows for the chain (C25, C38); null: no callback. */
  model: readonly ModelPart[] | null
  timeoutMs: number
  type: string
  lang: string | undefined
  perPage: number
  /** The request's token; null starts a sync. */
  token: SyncToken | null
  /** SYNC_RETENTION_DAYS: a kept page expires when its tokens would (C48). */
  retentionDays: number
}

/**
 * One sync page (C48): one statement, the token checked against what it read
 * (type, language, the log's pruned horizon), the URL of the next page or of
 * the next sync, and the body rendered when no callback will change it.
 * @example await loadSyncAnswer({ ...options, type: 'post', lang: undefined, perPage: 100, token: null })
 */
export async function loadSyncAnswer(options: SyncAnswerOptions): Promise<Loaded<ContentAnswer>> {
  const { token } = options
  const page = await readSyncPage(options.sql, {
    type: options.type,
    lang: options.lang,
    since: token?.since ?? null,
    afterId: token?.afterId ?? 0,
    limit: options.perPage,
    model: options.model,
    timeoutMs: options.timeoutMs,
  })
  if (!page.typeExists || page.typeId === null) throw contentTypeNotFound()
  const language = page.languages.selected ?? ''
  if (token && (token.typeId !== page.typeId || token.language !== language)) throw invalidToken()
  // Rows a token needs may have been pruned by a writer of the database (sql/change-log.md).
  if (token && [token.since, token.until].some((mark) => mark !== null && mark.at < page.prunedBefore)) throw expiredToken()
  const sync = { deleted: page.deleted, meta: nextUrls(options, page, token, language) }
  const surrogateKeys = [typeTag(options.type), listsTag(options.type), ...page.rows.map((row) => `entry-${row.id}`)].join(' ')
  const languages = page.languages
  const goLiveMs = page.goLiveInSeconds === null ? Infinity : Math.max(0, page.goLiveInSeconds * 1000)
  const loaded = { typeId: page.typeId, expiresInMs: Math.min(goLiveMs, retainedMs(token, options.retentionDays)), language: page.languages.selected }
  const base = { status: 200 as const, surrogateKeys, languages, meta: null, link: null, sync }
  if (options.model !== null) {
    return { ...loaded, value: { ...base, rendered: null, rows: page.rows }, bytes: JSON.stringify(page.rows).length * 2 + 1024 }
  }
  const rendered = render(syncBody(page.rows.map((row) => toItem(row, options.mediaBaseUrl)), sync))
  return { ...loaded, value: { ...base, rendered, rows: [] }, bytes: rendered.body.byteLength + surrogateKeys.length * 2 + 256 }
}

/**
 * How long a page may be kept: until the oldest mark of its request's token
 * (or, starting a sync, of the tokens it hands out: now) is older than
 * SYNC_RETENTION_DAYS. Kept longer, it would answer 200 to a token due a 410, or
 * hand every client a next URL already expired (a loop of 410s and new syncs).
 */
function retainedMs(token: SyncToken | null, retentionDays: number): number {
  const marks = [token?.since, token?.until].filter((mark): mark is NonNullable<typeof mark> => mark != null).map((mark) => Date.parse(mark.at))
  const oldest = Math.min(Date.now(), ...marks)
  return Math.max(0, oldest + retentionDays * 86_400_000 - Date.now())
}

/**
 * The body of a sync page: `{ data, deleted, meta: { next_page_url, next_sync_url } }`.
 * @example syncBody([], { deleted: [7], meta: { next_page_url: null, next_sync_url: 'https://…' } })
 */
export function syncBody(items: readonly (object | null)[], sync: SyncEnvelope): object {
  return { data: items, deleted: sync.deleted, meta: sync.meta }
}

/**
 * Exactly one URL: the next page of this sync (the same changes, after the
 * page's last id), or, after the last page, the next sync from what the first
 * page of this sync saw of the log (so that nothing written while the pages
 * were read is missed; what is read twice is read by its latest state).
 */
function nextUrls(options: SyncAnswerOptions, page: SyncPage, token: SyncToken | null, language: string): SyncEnvelope['meta'] {
  const until = token?.until ?? page.mark
  const url = (next: SyncToken) => {
    const query = [`lang=${encodeQueryValue(language)}`]
    if (options.perPage !== DEFAULT_SYNC_PER_PAGE) query.push(`per_page=${options.perPage}`)
    query.push(`token=${encodeSyncToken(next)}`)
    return `${options.publicUrl}/api/v1/sync/${encodeURIComponent(options.type)}?${query.join('&')}`
  }
  const typeId = page.typeId!
  if (page.hasMore && page.lastId !== null) {
    return { next_page_url: url({ typeId, language, since: token?.since ?? null, until, afterId: page.lastId }), next_sync_url: null }
  }
  return { next_page_url: null, next_sync_url: url({ typeId, language, since: until, until: null, afterId: 0 }) }
}

/** C48: `per_page` by default, and at most. */
export const DEFAULT_SYNC_PER_PAGE = 100
export const MAX_SYNC_PER_PAGE = 1000
