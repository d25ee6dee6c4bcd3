import { Elysia } from 'elysia'
import type { Logger } from '../log'
import { JSON_CONTENT_TYPE, jsonResponse } from './json-response'
import { DatabaseUnavailableError } from '../db/read'
import { HttpError, INTERNAL_ERROR, notFound, serviceUnavailable } from './errors'

/** An incoming X-Request-Id is echoed only when it is short and plain (C29). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/

/** Paths a probe calls every few seconds: logged at debug level only. */
const QUIET_PATHS = new Set(['/healthz', '/readyz'])

const startedAt = new WeakMap<Request, number>()

/**
 * What every response gets, errors included: a request id, `nosniff`, JSON
 * errors `{ "error": … }` (C4, C21, C22), and one log line per request.
 * `cacheMaxAge` is CACHE_MAX_AGE, for the Cache-Control of errors (C33).
 * @example new Elysia().use(requestPolicy(log, 0))
 */
export function requestPolicy(log: Logger, cacheMaxAge = 0) {
  return new Elysia({ name: 'request-policy' })
    .onRequest(({ request, set }) => {
      startedAt.set(request, performance.now())
      setRequestHeaders(set.headers, request)
    })
    .onError({ as: 'global' }, ({ code, error, set, request }) => failureResponse(log, cacheMaxAge, code, error, request, set))
    .onAfterResponse({ as: 'global' }, ({ request, set, responseValue }) => {
      // This runs after the response, outside any handler: whatever throws here would end the process.
      if (log.writes?.('info') === false) return
      // A handler that returns a Response (the redirect of `GET /`, the cache's slot) sets its status
      // there, not in `set`; the slot's holds the request id too, and empties `set` (AnswerSlot.send).
      const response = responseValue instanceof Response ? responseValue : undefined
      const status = response?.status ?? (typeof set.status === 'number' ? set.status : 200)
      logRequest(log, request, set.headers['X-Request-Id'] ?? response?.headers.get('X-Request-Id') ?? undefined, status, startedAt.get(request))
    })
}

/** What every response starts with (C4, C29): the request's id, `nosniff`, and JSON unless a route answers otherwise (the documentation pages). */
function setRequestHeaders(headers: Record<string, unknown>, request: Request): void {
  headers['X-Request-Id'] = requestIdOf(request)
  headers['X-Content-Type-Options'] = 'nosniff'
  headers['Content-Type'] = JSON_CONTENT_TYPE
}

/**
 * The error response of a request that failed (C4, C21, C22, C33): its status and
 * headers set in `set`, which the framework adds to the response (or
 * `answerOutsideFramework` does); a fault is logged with the request's id.
 */
function failureResponse(log: Logger, cacheMaxAge: number, code: unknown, error: unknown, request: Request, set: RouteSettings): Response {
  const failure = toHttpError(code, error)
  if (failure.status >= 500) {
    const fields = { requestId: set.headers['X-Request-Id'], method: request.method, path: requestTarget(request.url).path }
    if (error instanceof DatabaseUnavailableError) logUnavailable(log, error, fields)
    else log.error('request failed', { ...fields, error })
  }
  set.status = failure.status
  Object.assign(set.headers, failure.headers, { 'Content-Type': JSON_CONTENT_TYPE })
  // C33: a fault is never kept by any cache; a bad request is the same for everyone.
  if (failure.status >= 500) set.headers['Cache-Control'] = 'no-store'
  else if (failure.status === 400 || failure.status === 405) set.headers['Cache-Control'] = `public, max-age=${cacheMaxAge}`
  // A response, not a plain object: for an object the framework would add its own lower-case
  // `content-type` beside ours, and send both (see src/http/response-headers.ts).
  return jsonResponse({ error: failure.message }, failure.status)
}

/** What a route's handler is given to set its response's status and headers with, as Elysia's `set`. */
export interface RouteSettings {
  headers: Record<string, unknown>
  status?: unknown
}

/**
 * Answers a request without the framework, as the framework would with this
 * policy and `cors` (src/http/cors.ts): `handle` gets the same `set` (the
 * request's id, `nosniff`, JSON, the CORS headers), a failure the same error
 * response, and the request the same log line. For handlers that return a
 * finished Response and empty `set` (AnswerSlot.send), which Elysia then sends
 * unchanged. The content routes' plain GETs take this way (src/content/routes.ts).
 * @example const outside = answerOutsideFramework(log, 0, corsHeaders(config)); await outside(request, (set) => handler(set))
 */
export function answerOutsideFramework(log: Logger, cacheMaxAge: number, cors: (request: Request) => Record<string, string>) {
  return async (request: Request, handle: (set: RouteSettings) => Promise<Response>): Promise<Response> => {
    const since = performance.now()
    const set: RouteSettings = { headers: {}, status: 200 }
    setRequestHeaders(set.headers, request)
    Object.assign(set.headers, cors(request))
    let response: Response
    try {
      response = await handle(set)
    } catch (error) {
      // The framework's code of an error it did not raise itself: its own, else UNKNOWN.
      const failed = failureResponse(log, cacheMaxAge, (error as { code?: unknown } | null)?.code ?? 'UNKNOWN', error, request, set)
      response = withSetHeaders(failed, set.headers)
    }
    logRequest(log, request, set.headers['X-Request-Id'] ?? response.headers.get('X-Request-Id') ?? undefined, response.status, since)
    return response
  }
}

/** As the framework sends a handler's Response with `set`: each header of `set` the response does not have is added. */
function withSetHeaders(response: Response, headers: Record<string, unknown>): Response {
  const merged = new Headers(response.headers)
  for (const name in headers) if (!response.headers.has(name)) merged.set(name, String(headers[name]))
  return new Response(response.body, { status: response.status, headers: merged })
}

/**
 * C29: the request's id: the incoming `X-Request-Id` when it is short and plain, else a new UUID.
 * @example requestIdOf(new Request('http://localhost/', { headers: { 'X-Request-Id': 'abc' } })) // 'abc'
 */
export function requestIdOf(request: Request): string {
  const incoming = request.headers.get('x-request-id')
  return incoming && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID()
}

/**
 * The one log line of a request, once it is answered (probes at debug level).
 * It runs after the response, outside any handler: it never throws.
 * @example logRequest(log, request, 'abc', 200, startedAt)
 */
export function logRequest(log: Logger, request: Request, requestId: unknown, status: number, since = performance.now()): void {
  // Above info (LOG_LEVEL warn: what a busy site runs), not even the path is worked out.
  if (log.writes?.('info') === false) return
  try {
    const { path, query } = requestTarget(request.url)
    const fields = { requestId, method: request.method, path, query, status, ms: Math.round((performance.now() - since) * 10) / 10 }
    if (QUIET_PATHS.has(path)) log.debug('request', fields)
    else log.info('request', fields)
  } catch (error) {
    log.error('the request log line failed', { error })
  }
}

/**
 * The path and query of a request URL, for the log; never throws, whatever the URL.
 * @example requestTarget('http://localhost/api/v1/content/post?page=2') // { path: '/api/v1/content/post', query: 'page=2' }
 */
export function requestTarget(url: string): { path: string; query: string | undefined } {
  if (!URL.canParse(url)) return { path: url, query: undefined }
  const parsed = new URL(url)
  return { path: parsed.pathname, query: parsed.search.slice(1) || undefined }
}

function toHttpError(code: unknown, error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (code === 'NOT_FOUND') return notFound()
  if (code === 'VALIDATION') {
    // A path segment that is not valid percent-encoding arrives as null (C20).
    const part = (error as { type?: string }).type
    if (part === 'params') return notFound()
    if (part === 'query') return new HttpError(400, 'The query string is not valid.')
  }
  if (error instanceof DatabaseUnavailableError) return serviceUnavailable(error)
  return new HttpError(500, INTERNAL_ERROR)
}

/**
 * C22: a 503 says why in the log: its reason and the driver's or server's code.
 * A failure that will not heal by itself (a wrong password) is an error; a
 * passing one (refused, lost, slow) a warning.
 */
function logUnavailable(log: Logger, failure: DatabaseUnavailableError, fields: Record<string, unknown>): void {
  const details = { ...fields, reason: failure.reason, code: failure.code, cause: failure.cause instanceof Error ? failure.cause.message : undefined }
  if (failure.needsOperator) log.error('database unavailable: this will not heal by itself, check DATABASE_URL and the role', details)
  else log.warn('database unavailable', details)
}
