import { badParameter, badRequest, contentTypeNotFound } from '../http/errors'
import type { ListStart } from './content-answer'
import { decodeCursor } from './cursor'

export const DEFAULT_PER_PAGE = 20
export const MAX_PER_PAGE = 100

const DECIMAL_DIGITS = /^[0-9]+$/

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

function readPositiveInteger(name: string, text: string | undefined, fallback: number): number {
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
