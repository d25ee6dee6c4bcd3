import type { Loaded } from '../cache/content-cache'
import type { NextGoLives } from '../cache/next-go-lives'
import type { Sql } from '../db/connect'
import type { EntryModel, ModelPart } from '../hooks/extension'
import { etagOf } from '../http/http-caching'
import { selectFields, toItem } from './map-item'
import { encodeCursor } from './cursor'
import { findLiveEntryBySlug } from './entry-statement'
import { listLiveEntries, type EntryPage } from './list-statement'
import { DEFAULT_PER_PAGE, FULL_ITEM, INCLUDE_VALUES, NO_FILTERS, type ItemShape, type ListFilters, type ListStart } from './parameters'
import type { EntryRow, Languages } from './statement-fragments'
import type { Item } from './schemas'

/** `meta` of a list answer (service.md §2.3). */
export interface ListMeta {
  current_page: number
  last_page: number
  per_page: number
  total: number
}

/**
 * One answer of the content routes before the filter chain: what the
 * service's cache keeps (C35, C38). Without callbacks, the final bytes and
 * their ETag; with callbacks, the database rows, from which each request maps
 * its own items, and the entries' models, built once and frozen. The chain's
 * outputs are kept beside it, per variant (src/cache/content-cache.ts).
 */
export interface ContentAnswer {
  status: 200 | 404
  /** C34: `type-{slug}` and `entry-{id}` of every item. */
  surrogateKeys: string
  /** The body as sent, when no callback will change it (404s always). */
  rendered: RenderedBody | null
  /** What the filter chain needs, when callbacks are registered. */
  rows: EntryRow[]
  /** Each callback's second argument for each row (`models[callback][row]`), built by the first request that runs the chain (C25, C54). */
  models?: readonly (readonly EntryModel[])[]
  languages: Languages
  /** Lists only. */
  meta: ListMeta | null
  /** Lists only: the `Link` header, RFC 8288 (C39). */
  link: string | null
  /** Sync pages only (C48, src/changes/): what the envelope holds besides the items. */
  sync?: SyncEnvelope
}

/** A sync page's envelope besides `data` (C48). */
export interface SyncEnvelope {
  deleted: number[]
  meta: { next_page_url: string | null; next_sync_url: string | null }
}

export interface RenderedBody {
  body: Uint8Array<ArrayBuffer>
  etag: string
}

export interface AnswerOptions {
  sql: Sql
  mediaBaseUrl: string
  /** Callbacks are registered: load each entry's model with these parts (C54) and leave the body to the chain (C25, C38); null: no callback. */
  model: readonly ModelPart[] | null
  timeoutMs: number
  type: string
  lang: string | undefined
  /** What `Link` URLs start with: PUBLIC_URL. */
  publicUrl: string
  /** Count by scanning the entries: the type's kept count drifted (sql/live-entry-counts.md). */
  countByScan?: boolean
  /** What each item holds (C44, C45); every default key by default. */
  shape?: ItemShape
  /** C36: the types' next go-lives the change listener keeps. */
  goLives?: NextGoLives
}

const encoder = new TextEncoder()

/**
 * The list answer (service.md §4.1): one statement, mapped, and rendered when
 * no callback will change it. A page starts at an offset or, with a cursor,
 * right after a place in list order (C39); `Link` says where the walk goes on.
 * @example await loadListAnswer({ ...options, perPage: 20, start: { page: 1, cursor: null } })
 */
export async function loadListAnswer(options: AnswerOptions & { perPage: number; start: ListStart; filters?: ListFilters }): Promise<Loaded<ContentAnswer>> {
  const { perPage, start, filters = NO_FILTERS } = options
  const result = await listLiveEntries(options.sql, {
    type: options.type,
    lang: options.lang,
    limit: perPage,
    start: start.cursor ? { after: start.cursor.position } : { offset: Math.min((start.page - 1) * perPage, Number.MAX_SAFE_INTEGER) },
    countByScan: options.countByScan,
    goLives: options.goLives,
    model: options.model,
    alternates: options.shape?.alternates,
    highlights: options.shape?.highlights,
    timeoutMs: options.timeoutMs,
    filters,
  })
  const loaded = { typeId: result.typeId, expiresInMs: expiresInMs(result.goLiveInSeconds), language: result.languages.selected }
  if (!result.typeExists) return { ...loaded, ...(errorAnswer('Content type not found.', options.type)) }
  const meta = { current_page: start.page, last_page: Math.max(1, Math.ceil(result.total / perPage)), per_page: perPage, total: result.total }
  const link = listLink({ ...options, filters, shape: options.shape ?? FULL_ITEM }, result, meta, start)
  return entriesAnswer(options, loaded, result.rows, result.languages, meta, link)
}

/**
 * C39: `next` continues right after the page's last entry with a cursor,
 * when more live entries follow it; `first` and `last` are pages by number;
 * `prev` too, for a page asked by number (a cursor knows no page before it).
 * The URLs keep `lang` when it selects a language other than the default,
 * `per_page` when it is not the default, the filters, normalised (C43), and
 * what the items hold (C44, C45, C55: `include` lists what they are given,
 * `fields` in the item's order): nothing else of the request, so that every
 * request that shares an answer (C35) shares its links.
 */
function listLink(options: AnswerOptions & { perPage: number; filters: ListFilters; shape: ItemShape }, result: EntryPage, meta: ListMeta, start: ListStart): string {
  const { filters, shape } = options
  const base = `${options.publicUrl}/api/v1/content/${encodeURIComponent(options.type)}`
  const url = (parameter: { page: number } | { after: string }) => {
    const query: string[] = []
    const set = (name: string, value: string) => query.push(`${name}=${encodeQueryValue(value)}`)
    if (result.languages.selected !== null && result.languages.selected !== result.languages.default) set('lang', result.languages.selected)
    if (options.perPage !== DEFAULT_PER_PAGE) set('per_page', String(options.perPage))
    if (filters.terms.length > 0) set('term', filters.terms.map((pair) => `${pair.taxonomy}:${pair.slug}`).join(','))
    if (filters.author !== null) set('author', String(filters.author))
    if (filters.search !== null) set('search', filters.search)
    if (filters.search !== null && filters.order === 'date') set('order', 'date')
    const include = INCLUDE_VALUES.filter((value) => shape[value])
    if (include.length > 0) set('include', include.join(','))
    if (shape.fields !== null) set('fields', shape.fields.join(','))
    if ('after' in parameter) set('after', parameter.after)
    else if (parameter.page !== 1) set('page', String(parameter.page))
    const text = query.join('&')
    return text ? `${base}?${text}` : base
  }
  const links: string[] = []
  const last = result.rows.at(-1)
  // A page number past 2^53 - 1 cannot be read back (C6): the cursor then keeps the last one.
  const nextPage = Math.min(start.page + 1, Number.MAX_SAFE_INTEGER)
  if (result.hasMore && last) links.push(`<${url({ after: encodeCursor(nextPage, last.position, last.id, last.rank) })}>; rel="next"`)
  if (!start.cursor && start.page > 1) links.push(`<${url({ page: Math.min(start.page - 1, meta.last_page) })}>; rel="prev"`)
  links.push(`<${url({ page: 1 })}>; rel="first"`, `<${url({ page: meta.last_page })}>; rel="last"`)
  return links.join(', ')
}

/**
 * A query value, percent-encoded as RFC 3986 asks; `:` and `,`, which a query
 * may hold as they are, stay readable (`term=category:news,tag:bun`). A
 * space is %20, never `+`, which a server may read as a plus sign.
 * @example encodeQueryValue('category:news,tag:bun') // 'category:news,tag:bun'
 */
export function encodeQueryValue(value: string): string {
  return encodeURIComponent(value).replaceAll('%3A', ':').replaceAll('%2C', ',')
}

/**
 * The single-entry answer (service.md §4.2).
 * @example await loadEntryAnswer({ ...options, slug: 'about-us' })
 */
export async function loadEntryAnswer(options: AnswerOptions & { slug: string | null }): Promise<Loaded<ContentAnswer>> {
  const result = await findLiveEntryBySlug(options.sql, {
    type: options.type,
    lang: options.lang,
    slug: options.slug,
    model: options.model,
    alternates: options.shape?.alternates,
    highlights: options.shape?.highlights,
    timeoutMs: options.timeoutMs,
    goLives: options.goLives,
  })
  const loaded = { typeId: result.typeId, expiresInMs: expiresInMs(result.goLiveInSeconds), language: result.languages.selected }
  // C5: the type is checked before the slug.
  if (!result.typeExists) return { ...loaded, ...(errorAnswer('Content type not found.', options.type)) }
  if (result.row === null) return { ...loaded, ...(errorAnswer('Not found.', options.type)) }
  return entriesAnswer(options, loaded, [result.row], result.languages, null, null)
}

/**
 * The body of a 200 answer: the list envelope, or the single-entry one.
 * @example envelope([item], null) // { data: item }
 */
export function envelope(items: readonly (Item | null | object)[], meta: ListMeta | null): object {
  return meta === null ? { data: items[0] } : { data: items, meta }
}

/**
 * The bytes of a body and their ETag (C32).
 * @example render({ data: [] })
 */
export function render(body: object): RenderedBody {
  const bytes = encoder.encode(JSON.stringify(body))
  return { body: bytes, etag: etagOf(bytes) }
}

function entriesAnswer(
  options: AnswerOptions,
  loaded: Omit<Loaded<ContentAnswer>, 'value' | 'bytes'>,
  rows: EntryRow[],
  languages: Languages,
  meta: ListMeta | null,
  link: string | null,
): Loaded<ContentAnswer> {
  // A list's entries are not all it shows: which entries are live, and their count, are its too (C51).
  const typeTags = meta === null ? [typeTag(options.type)] : [typeTag(options.type), listsTag(options.type)]
  const surrogateKeys = [...typeTags, ...rows.map((row) => `entry-${row.id}`)].join(' ')
  if (options.model !== null) {
    return {
      ...loaded,
      value: { status: 200, surrogateKeys, rendered: null, rows, languages, meta, link },
      // The rows stay for the chain; their size is what the cache holds, measured only when it keeps them (C54: a miss the cache does not keep pays nothing for it).
      get bytes() {
        return JSON.stringify(rows).length * 2 + (link?.length ?? 0) * 2
      },
    }
  }
  const items = rows.map((row) => toItem(row, options.mediaBaseUrl))
  const rendered = render(envelope(selectFields(items, options.shape?.fields ?? null), meta))
  return { ...loaded, value: { status: 200, surrogateKeys, rendered, rows: [], languages, meta, link }, bytes: rendered.body.byteLength + (surrogateKeys.length + (link?.length ?? 0)) * 2 + 256 }
}

function errorAnswer(message: string, type: string): { value: ContentAnswer; bytes: number } {
  const rendered = render({ error: message })
  const languages = { selected: null, default: null }
  // An entry not found may be found after a write that names no entry of this answer (C51).
  return { value: { status: 404, surrogateKeys: `${typeTag(type)} ${listsTag(type)}`, rendered, rows: [], languages, meta: null, link: null }, bytes: rendered.body.byteLength + 256 }
}

/**
 * C34: the type's tag. A header holds Latin-1 and a space separates tags: any
 * other character of a type's slug is percent-encoded (an unknown type named
 * in Japanese was a 500).
 * @example typeTag('日本') // 'type-%E6%97%A5%E6%9C%AC'
 */
export function typeTag(type: string): string {
  return `type-${encodeURIComponent(type)}`
}

/**
 * C51: the tag of every answer of a type that depends on which of its entries
 * are live, not only on the entries it shows (lists, totals, a 404): a write
 * to an entry purges `entry-{id}` and this, and the other entries' answers stay.
 * @example listsTag('post') // 'lists-post'
 */
export function listsTag(type: string): string {
  return `lists-${encodeURIComponent(type)}`
}

/** C51: a tag every answer of the service carries, so that a cache in front of it can be purged of everything with one key. */
export const EVERY_ANSWER_TAG = 'vitrine'

/** C36: an answer is true until its type's next go-live. */
export function expiresInMs(goLiveInSeconds: number | null): number {
  return goLiveInSeconds === null ? Infinity : Math.max(0, goLiveInSeconds * 1000)
}
