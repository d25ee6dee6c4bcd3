import { badParameter } from '../http/errors'

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

function readPositiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const value = DECIMAL_DIGITS.test(text) ? Number(text) : 0
  if (value >= 1 && (name === 'per_page' || Number.isSafeInteger(value))) return value
  throw badParameter(name)
}
