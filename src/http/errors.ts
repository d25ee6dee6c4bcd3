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
export const methodNotAllowed = (allow: string) => new HttpError(405, 'Method not allowed.', { allow })
export const badParameter = (name: string) => new HttpError(400, `The ${name} parameter must be a positive integer.`)
export const serviceUnavailable = () => new HttpError(503, 'Service unavailable.', { 'retry-after': '5' })
export const INTERNAL_ERROR = 'Internal server error.'

/** postgres.js error codes and SQLSTATEs that mean the database cannot be reached right now (C22). */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'DATABASE_TIMEOUT',
  // admin shutdown, crash shutdown, cannot connect now, too many connections, connection exceptions,
  // and a statement cancelled by statement_timeout (the database is too slow to answer now).
  '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006', '57014',
])

export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && UNAVAILABLE_CODES.has(code)
}
