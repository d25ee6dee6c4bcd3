import { methodNotAllowed, notFound } from './errors'
import { ALLOWED_METHODS } from './response-headers'

/**
 * What every API route does alike (C3, C5, C20): the content routes, the
 * discovery routes and the index.
 */

/**
 * Elysia hands over a path segment that is not valid percent-encoding as null.
 * It becomes NUL, a value that matches nothing, so that such a type (or
 * taxonomy) is an unknown one (C5) and such a slug is "Not found." after the
 * type check (C20).
 * @example new Elysia().get('/api/v1/content/:type', handler, { transform: markUndecodable })
 */
export function markUndecodable({ params }: { params: Record<string, string | null> }): void {
  for (const name of Object.keys(params)) params[name] ??= '\u0000'
}

/**
 * C3: any method but GET, HEAD and OPTIONS on an API path.
 * @example new Elysia().all('/api/v1/languages', ({ request }) => rejectMethod(request))
 */
export function rejectMethod(request: Request): never {
  throw request.method === 'OPTIONS' ? notFound() : methodNotAllowed(ALLOWED_METHODS)
}
