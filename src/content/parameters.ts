import { badParameter, badRequest, contentTypeNotFound } from '../http/errors'
import { decodeCursor, type Cursor } from './cursor'

export const DEFAULT_PER_PAGE = 20
export const MAX_PER_PAGE = 100

const DECIMAL_DIGITS = /^[0-9]+$/

/** Where a list page starts: a page number (C6), or a cursor that also says which page it opens (C39). */
export interface ListStart {
  page: number
  cursor: Cursor | null
}

export interface Pagination {
  page: number
  perPage: number
}

/**
 * C6, C7: `page` and `per_page` are positive integers in decimal digits; a
 * `per_page` above 100 is clamped. Anything else is a 400 naming the parameter.
 * @example readPagination({ page: '2', per_page: '500' }) // { page: 2, perPage: 100 }
 */
export function readPagination(query: { page?: string; per_page?: string }): Pagination {
  const page = readPositiveInteger('page', query.page, 1)
  const perPage = Math.min(readPositiveInteger('per_page', query.per_page, DEFAULT_PER_PAGE), MAX_PER_PAGE)
  return { page, perPage }
}

/**
 * Where a list page starts: `page` (C6), or `after`, a cursor from a `Link`
 * header (C39). Both at once is a 400: they name two different places.
 * @example readListStart({ per_page: '50' }) // { start: { page: 1, cursor: null }, perPage: 50 }
 */
export function readListStart(query: { page?: string; per_page?: string; after?: string }): { start: ListStart; perPage: number } {
  const { page, perPage } = readPagination(query)
  if (query.after === undefined) return { start: { page, cursor: null }, perPage }
  if (query.page !== undefined) throw badRequest('The page and after parameters cannot be used together.')
  const cursor = decodeCursor(query.after)
  return { start: { page: cursor.page, cursor }, perPage }
}

/** C6: a positive integer in decimal digits, or a 400 naming the parameter. */
export function readPositiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const value = DECIMAL_DIGITS.test(text) ? Number(text) : 0
  if (value >= 1 && (name === 'per_page' || Number.isSafeInteger(value))) return value
  throw badParameter(name)
}

/**
 * PostgreSQL text cannot hold a NUL character, so a value with one can match
 * nothing. A path segment that is not valid percent-encoding arrives as NUL
 * too (see `markUndecodable` in routes.ts).
 */
const UNMATCHABLE = /[\u0000]/

/** C5: a type that cannot exist is an unknown type. */
export function readType(type: string): string {
  if (UNMATCHABLE.test(type)) throw contentTypeNotFound()
  return type
}

/** C20: a slug holding "/" (sent as %2F), or one that cannot exist, matches no entry: null. */
export function readSlug(slug: string): string | null {
  return slug.includes('/') || UNMATCHABLE.test(slug) ? null : slug
}

/** C9: a language code that cannot exist is an unknown one: the default language. */
export function readLanguage(lang: string | undefined): string | undefined {
  return lang !== undefined && UNMATCHABLE.test(lang) ? undefined : lang
}

/** C40: at most this many `taxonomy:slug` pairs. */
export const MAX_TERM_PAIRS = 10
/** C42: at most this many characters of search text. */
export const MAX_SEARCH_LENGTH = 200

/** One `taxonomy:slug` pair of C40, as sent. */
export interface TermPair {
  taxonomy: string
  slug: string
}

/**
 * The filters of a list (C40–C43), normalised: what the cache key, the
 * statement and the `Link` URLs are made of. Null or empty: not filtered.
 */
export interface ListFilters {
  /** The pairs in the order given, each once. */
  terms: TermPair[]
  author: number | null
  /** The text as sent; null when absent or blank. */
  search: string | null
  /** `relevance` only with a search (its default); `date` otherwise. */
  order: 'relevance' | 'date'
}

export const NO_FILTERS: ListFilters = { terms: [], author: null, search: null, order: 'date' }

const TERM_ERROR = 'The term parameter must be a comma-separated list of taxonomy:slug pairs.'

/**
 * C40–C42: `term`, `author`, `search` and `order`, checked and normalised.
 * Anything malformed is a 400 before any statement is sent.
 * @example readListFilters({ term: 'category:news,tag:bun', search: 'coffee' })
 */
export function readListFilters(query: { term?: string; author?: string; search?: string; order?: string }): ListFilters {
  const terms = query.term === undefined ? [] : readTermPairs(query.term)
  const author = query.author === undefined ? null : readPositiveInteger('author', query.author, 0)
  const search = readSearch(query.search)
  const order = readOrder(query.order, search !== null)
  return { terms, author, search, order }
}

function readTermPairs(text: string): TermPair[] {
  const parts = text.split(',')
  if (parts.length > MAX_TERM_PAIRS) throw badRequest(TERM_ERROR)
  const pairs: TermPair[] = []
  const seen = new Set<string>()
  for (const part of parts) {
    // The first colon separates: a slug may hold one, a taxonomy's slug cannot be told apart from it otherwise.
    const colon = part.indexOf(':')
    if (colon <= 0 || colon === part.length - 1) throw badRequest(TERM_ERROR)
    // The same pair twice asks nothing more (AND): kept once, where it came first.
    if (seen.has(part)) continue
    seen.add(part)
    pairs.push({ taxonomy: part.slice(0, colon), slug: part.slice(colon + 1) })
  }
  return pairs
}

function readSearch(text: string | undefined): string | null {
  if (text === undefined || text.trim() === '') return null
  // Characters, not UTF-16 code units: an emoji is one.
  let length = 0
  for (const _ of text) if (++length > MAX_SEARCH_LENGTH) throw badRequest(`The search parameter must be at most ${MAX_SEARCH_LENGTH} characters.`)
  return text
}

function readOrder(text: string | undefined, searching: boolean): 'relevance' | 'date' {
  if (text === undefined) return searching ? 'relevance' : 'date'
  if (text === 'date' || (text === 'relevance' && searching)) return text
  throw badRequest('The order parameter must be relevance or date.')
}

/**
 * What each item of an answer holds (C44, C45, C55), normalised: what the
 * cache key, the statement and the `Link` URLs are made of.
 */
export interface ItemShape {
  /** Each entry's `alternates` are loaded (C45): asked by `include=alternates`, or by naming them in `fields`. */
  alternates: boolean
  /** Each item has `highlights` (C55): asked by `include=highlights`, or by naming them in `fields`. */
  highlights: boolean
  /** The keys each item keeps (C44), each once, in the item's usual order; null: every key. */
  fields: readonly string[] | null
}

export const FULL_ITEM: ItemShape = { alternates: false, highlights: false, fields: null }

/** C45, C55: what `include` may list. */
export const INCLUDE_VALUES = ['alternates', 'highlights'] as const

/**
 * C44, C45, C55: `include` and `fields`, checked against the keys an item can
 * have (`itemKeys`: the default ones, `alternates`, `highlights`, then those
 * the installed extensions declare, in that order). `include` is a
 * comma-separated list of INCLUDE_VALUES, written exactly (a value named twice
 * counts once). In `fields`, blanks around a key and empty entries are
 * skipped, a key named twice counts once, the order given does not matter
 * (items keep their usual order), and no key at all is as if absent; the
 * first unknown key, in the order given, is the 400. Naming `alternates` or
 * `highlights` in `fields` asks for them, as `include` does.
 * Anything malformed is a 400 before any statement is sent.
 * @example readItemShape({ fields: 'title, id' }, ['id', 'title', 'alternates']) // { alternates: false, highlights: false, fields: ['id', 'title'] }
 */
export function readItemShape(query: { fields?: string; include?: string }, itemKeys: readonly string[]): ItemShape {
  const include = query.include === undefined ? [] : query.include.split(',')
  if (include.some((value) => !(INCLUDE_VALUES as readonly string[]).includes(value))) {
    throw badRequest(`The include parameter must be a comma-separated list of: ${INCLUDE_VALUES.join(', ')}.`)
  }
  const fields = query.fields === undefined ? null : readFields(query.fields, itemKeys)
  const asked = (key: (typeof INCLUDE_VALUES)[number]) => include.includes(key) || (fields?.includes(key) ?? false)
  return { alternates: asked('alternates'), highlights: asked('highlights'), fields }
}

function readFields(text: string, itemKeys: readonly string[]): string[] | null {
  const named = new Set<string>()
  for (const part of text.split(',')) {
    const key = part.trim()
    if (key === '') continue
    if (!itemKeys.includes(key)) throw badRequest(`The fields parameter names an unknown field: ${key}.`)
    named.add(key)
  }
  return named.size === 0 ? null : itemKeys.filter((key) => named.has(key))
}

/** Whether a pair can match a term: PostgreSQL text holds no NUL. */
export function isMatchable(pair: TermPair): boolean {
  return !UNMATCHABLE.test(pair.taxonomy) && !UNMATCHABLE.test(pair.slug)
}
