import type { DatabaseUnavailableError, UnavailableReason } from '../db/read'

/**
 * An error with an HTTP status and a message that is safe to show a client.
 * `onError` answers it as `{ "error": message }`; anything else is a 500.
 * @example throw new HttpError(404, 'Content type not found.')
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const notFound = () => new HttpError(404, 'Not found.')
export const contentTypeNotFound = () => new HttpError(404, 'Content type not found.')
export const taxonomyNotFound = () => new HttpError(404, 'Taxonomy not found.')
export const methodNotAllowed = (allow: string) => new HttpError(405, 'Method not allowed.', { Allow: allow })
export const badParameter = (name: string) => new HttpError(400, `The ${name} parameter must be a positive integer.`)
export const badRequest = (message: string) => new HttpError(400, message)
export const INTERNAL_ERROR = 'Internal server error.'

/** How long a client should wait before it tries again, by why the database could not answer. */
const RETRY_AFTER_SECONDS: Record<UnavailableReason, number> = { lost: 1, timeout: 2, connect: 2, overloaded: 5, busy: 1 }

/**
 * C22: the database could not answer. `Retry-After` is short: the service
 * recovers within a second of the database. A failure that needs an operator
 * (a wrong password) asks clients to wait longer.
 * @example throw serviceUnavailable(new DatabaseUnavailableError('lost', error))
 */
export function serviceUnavailable(failure?: DatabaseUnavailableError): HttpError {
  const seconds = failure === undefined ? 5 : failure.needsOperator ? 60 : RETRY_AFTER_SECONDS[failure.reason]
  return new HttpError(503, 'Service unavailable.', { 'Retry-After': String(seconds) })
}
