import { Elysia } from 'elysia'
import type { Config } from '../config'
import { ALLOWED_METHODS } from './response-headers'

/** Headers a browser script may read from our responses. */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, Allow, ETag, X-Cache, Age, Surrogate-Key'
/** How long a browser may reuse a preflight answer. */
const PREFLIGHT_MAX_AGE_SECONDS = '600'
/** `Access-Control-Request-Headers` as browsers send it: header names separated by commas. */
const HEADER_NAME_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/

/**
 * C29: CORS for GET, HEAD and OPTIONS, any origin by default, or only the
 * origins of CORS_ORIGINS. The API is public and uses no cookies: no credentials.
 *
 * With any origin, `Access-Control-Allow-Origin: *` is the same for every client,
 * so simple responses carry no `Vary` at all and shared caches keep one copy.
 * With a list, the answer depends on `Origin`, hence `Vary: Origin` on every
 * response. A preflight allows exactly the headers it asks for, so it also
 * varies by `Access-Control-Request-Headers`; simple responses never list
 * request headers.
 * @example new Elysia().use(corsPolicy({ corsOrigins: ['https://app.example'] }))
 */
export function corsPolicy(config: Pick<Config, 'corsOrigins'>) {
  const cors = corsHeaders(config)
  return new Elysia({ name: 'cors-policy' }).onRequest(({ request, set }) => {
    Object.assign(set.headers, cors(request))
    if (request.method === 'OPTIONS') return new Response(null, { status: 204 })
  })
}

/**
 * C29's headers of a GET or HEAD in two parts: those every such request gets
 * (`same`), and the `Access-Control-Allow-Origin` of one request when it
 * depends on its `Origin` (null: none, or already among `same`). What the
 * cache's slot builds its responses from (src/cache/answer-slot.ts).
 * @example corsOfReads({ corsOrigins: ['https://app.example'] }).same.Vary // 'Origin'
 */
export function corsOfReads(config: Pick<Config, 'corsOrigins'>): { same: Record<string, string>; allowedOrigin(request: Request): string | null } {
  if (config.corsOrigins === '*') return { same: { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED_HEADERS }, allowedOrigin: () => null }
  const listed = new Set(config.corsOrigins)
  return {
    same: { Vary: 'Origin', 'Access-Control-Expose-Headers': EXPOSED_HEADERS },
    allowedOrigin(request) {
      const origin = request.headers.get('origin')
      return origin !== null && listed.has(origin) ? origin : null
    },
  }
}

/**
 * The CORS headers of C29 for a request, as `corsPolicy` sets them: what a
 * response answered outside the framework (a 429) carries too.
 * @example corsHeaders({ corsOrigins: '*' })(request)['Access-Control-Allow-Origin'] // '*'
 */
export function corsHeaders(config: Pick<Config, 'corsOrigins'>): (request: Request) => Record<string, string> {
  const listed = config.corsOrigins === '*' ? null : new Set(config.corsOrigins)
  return (request) => {
    const headers: Record<string, string> = {}
    const origin = request.headers.get('origin')
    const vary: string[] = []
    if (listed === null) {
      headers['Access-Control-Allow-Origin'] = '*'
    } else {
      vary.push('Origin')
      if (origin !== null && listed.has(origin)) headers['Access-Control-Allow-Origin'] = origin
    }
    if (request.method !== 'OPTIONS') {
      if (vary.length) headers.Vary = vary.join(', ')
      headers['Access-Control-Expose-Headers'] = EXPOSED_HEADERS
      return headers
    }
    vary.push('Access-Control-Request-Headers')
    headers.Vary = vary.join(', ')
    headers['Access-Control-Allow-Methods'] = ALLOWED_METHODS
    headers['Access-Control-Max-Age'] = PREFLIGHT_MAX_AGE_SECONDS
    const requested = request.headers.get('access-control-request-headers')?.trim()
    if (requested && HEADER_NAME_LIST.test(requested)) {
      headers['Access-Control-Allow-Headers'] = requested.toLowerCase().split(/\s*,\s*/).join(', ')
    }
    return headers
  }
}
