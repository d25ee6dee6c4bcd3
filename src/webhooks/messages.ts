import { createHmac, randomUUID } from 'node:crypto'
import type { EntryChange } from './webhook-statement'

/** A content.changed message names at most this many ids per list (C57), then says `truncated`. */
export const MAX_IDS_PER_LIST = 1000

/** What a debounced endpoint is told once its window closes (C57). */
export interface Gathered {
  types: string[]
  published: number[]
  updated: number[]
  unpublished: number[]
  truncated: boolean
}

/**
 * A Standard Webhooks message id, the same on every attempt.
 * @example newMessageId() // 'msg_3f0c…'
 */
export function newMessageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`
}

/**
 * The body of a per-change message (C57): `urls` maps each language of a live
 * entry to its single-entry URL; empty for `entry.unpublished`.
 * @example entryMessage({ id: 7, type: 'post', kind: 'published', atMs: 0, slugs: [['en', 'hello']] }, 'https://cms.example.com')
 */
export function entryMessage(change: EntryChange, publicUrl: string): string {
  const urls: Record<string, string> = {}
  if (change.kind !== 'unpublished') {
    for (const [language, slug] of change.slugs) {
      urls[language] = `${publicUrl}/api/v1/content/${encodeURIComponent(change.type)}/${encodeURIComponent(slug)}?lang=${encodeURIComponent(language)}`
    }
  }
  return JSON.stringify({ type: `entry.${change.kind}`, timestamp: new Date(change.atMs).toISOString(), data: { id: change.id, type: change.type, urls } })
}

/**
 * The body of a debounced endpoint's `content.changed` (C57).
 * @example gatheredMessage(gathered, Date.now())
 */
export function gatheredMessage(gathered: Gathered, atMs: number): string {
  const { types, published, updated, unpublished, truncated } = gathered
  return JSON.stringify({ type: 'content.changed', timestamp: new Date(atMs).toISOString(), data: { types, published, updated, unpublished, ...(truncated ? { truncated: true } : {}) } })
}

/**
 * Adds `changes` to what a debounced endpoint has gathered: an entry is named
 * once, by what it became since the window opened (published then updated:
 * published; anything then unpublished: unpublished; unpublished then published:
 * updated, it was live before the window).
 * @example gather(null, [{ id: 7, type: 'post', kind: 'updated', atMs: 0, slugs: [] }])
 */
export function gather(gathered: Gathered | null, changes: readonly EntryChange[]): Gathered {
  const kinds = new Map<number, EntryChange['kind']>()
  for (const kind of ['published', 'updated', 'unpublished'] as const) for (const id of gathered?.[kind] ?? []) kinds.set(id, kind)
  const types = new Set(gathered?.types ?? [])
  for (const change of changes) {
    types.add(change.type)
    const before = kinds.get(change.id)
    const kind = before === 'published' && change.kind === 'updated' ? 'published' : before === 'unpublished' && change.kind === 'published' ? 'updated' : change.kind
    kinds.set(change.id, kind)
  }
  const lists: Gathered = { types: [...types].sort(), published: [], updated: [], unpublished: [], truncated: gathered?.truncated ?? false }
  for (const [id, kind] of kinds) {
    if (lists[kind].length < MAX_IDS_PER_LIST) lists[kind].push(id)
    else lists.truncated = true
  }
  return lists
}

/**
 * `webhook-signature` of Standard Webhooks: `v1,` and the base64 HMAC-SHA256,
 * keyed by the secret's bytes, of `id.timestamp.body`.
 * @example sign('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_1', 1764000000, '{}')
 */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`
}
