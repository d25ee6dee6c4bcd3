import { cors } from '@elysiajs/cors'
import { Elysia } from 'elysia'
import type { Config } from '../config'

/** Headers a browser script may read from our responses. */
const EXPOSED = ['X-Request-Id', 'Retry-After', 'Allow']

/**
 * C29: CORS for GET, HEAD and OPTIONS, any origin by default, or only the
 * origins of CORS_ORIGINS. The API is public and uses no cookies: no credentials.
 * @example new Elysia().use(corsPolicy(config))
 */
export function corsPolicy(config: Pick<Config, 'corsOrigins'>) {
  const anyOrigin = config.corsOrigins === '*'
  return new Elysia({ name: 'cors-policy' })
    .use(
      cors({
        origin: anyOrigin ? '*' : config.corsOrigins,
        methods: ['GET', 'HEAD', 'OPTIONS'],
        allowedHeaders: true,
        exposeHeaders: EXPOSED,
        credentials: false,
        maxAge: 600,
      }),
    )
    .onRequest(({ set }) => {
      // The plugin answers `Vary: *` for any origin, which forbids every shared
      // cache to reuse a response. `Access-Control-Allow-Origin: *` is the same
      // for every client, so it needs no Vary at all.
      if (anyOrigin) delete set.headers.vary
    })
}
