import { badRequest } from '../http/errors'

/** An entry's place in list order (C11): its publication time, exact to the microsecond, and its id. */
export interface ListPosition {
  /** The publication time in Unix seconds (`-Infinity` for '-infinity') and microseconds; null for an undated entry. */
  publishedAt: { seconds: number; microseconds: number } | null
  id: number
  /** A walk of search results by relevance (C42): the entry's rank, as PostgreSQL wrote the `real`. */
  rank?: string
}

/**
 * C39: the `after` cursor of a list walk. Opaque to clients: base64url of
 * `[page, publication time in Unix microseconds or null, id]`, the place in
 * list order (C11) of the last entry of the page before, and the number of
 * the page it opens (what `meta.current_page` shows). A walk of search
 * results by relevance (C42) adds a fourth element, the entry's rank as
 * PostgreSQL wrote it (a `real`, exact in its shortest text). It names a place, not
 * an entry: a cursor stays valid when its entry is unpublished or deleted,
 * and it can point only between live entries, so it reveals nothing hidden.
 */
export interface Cursor {
  page: number
  position: ListPosition
}

/** PostgreSQL's timestamps, in Unix seconds: 4714-11-24 BC to 294276 AD. */
const FIRST_SECOND = -210_866_803_200
const LAST_SECOND = 9_224_318_015_999
const MICROS = 1_000_000n
const EPOCH_TEXT = /^(-?)(\d{1,15})(?:\.(\d{1,6}))?$/

/**
 * The cursor that opens page `page`, right after the entry `id` whose exact
 * publication time PostgreSQL wrote as `position` (`1700000000.123456`,
 * `-Infinity`, or null when undated).
 * @example encodeCursor(3, '1700000000.500000', 42) // 'WzMsIjE3MDAwMDAwMDA1MDAwMDAiLDQyXQ'
 */
export function encodeCursor(page: number, position: string | null, id: number, rank?: string): string {
  const parts = [page, position === null ? null : epochMicros(position), id]
  return Buffer.from(JSON.stringify(rank === undefined ? parts : [...parts, rank])).toString('base64url')
}

/**
 * Reads an `after` parameter; anything that is not a cursor this service
 * wrote is a 400 that says so.
 * @example decodeCursor(encodeCursor(2, null, 7)) // { page: 2, position: { publishedAt: null, id: 7 } }
 */
export function decodeCursor(text: string): Cursor {
  const parts = parseParts(text)
  if (!parts) throw badRequest('The after parameter is not a valid cursor.')
  const [page, micros, id, rank] = parts
  const position = { publishedAt: micros === null ? null : timeOf(micros), id }
  return { page, position: rank === undefined ? position : { ...position, rank } }
}

/** A rank as PostgreSQL writes a `real`, finite: negative for a prefix-only match (C55). */
const RANK_TEXT = /^-?\d{1,20}(?:\.\d{1,20})?(?:e-?\d{1,2})?$/

function parseParts(text: string): [number, string | null, number, string?] | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (!Array.isArray(parts) || parts.length < 3 || parts.length > 4) return null
  const [page, micros, id, rank] = parts
  if (parts.length === 4 && !(typeof rank === 'string' && RANK_TEXT.test(rank))) return null
  if (!Number.isSafeInteger(page) || page < 1 || !Number.isSafeInteger(id) || id < 1) return null
  if (micros !== null && !(micros === '-infinity' || (typeof micros === 'string' && /^-?\d{1,22}$/.test(micros) && inRange(BigInt(micros))))) return null
  return parts.length === 4 ? [page, micros, id, rank] : [page, micros, id]
}

function inRange(micros: bigint): boolean {
  return micros >= BigInt(FIRST_SECOND) * MICROS && micros <= BigInt(LAST_SECOND) * MICROS + MICROS - 1n
}

/** `1700000000.123456` → `'1700000000123456'`; `-Infinity` → `'-infinity'`. */
function epochMicros(position: string): string {
  if (position === '-Infinity') return '-infinity'
  const match = EPOCH_TEXT.exec(position)
  if (!match) throw new Error(`unexpected publication time from the database: ${position}`)
  const [, sign, whole, fraction = ''] = match
  const micros = BigInt(whole!) * MICROS + BigInt(fraction.padEnd(6, '0'))
  return String(sign ? -micros : micros)
}

/** Whole seconds (rounded down) and the microseconds after them. */
function timeOf(micros: string): { seconds: number; microseconds: number } {
  if (micros === '-infinity') return { seconds: -Infinity, microseconds: 0 }
  const value = BigInt(micros)
  let seconds = value / MICROS
  if (value < 0n && seconds * MICROS !== value) seconds -= 1n
  return { seconds: Number(seconds), microseconds: Number(value - seconds * MICROS) }
}
