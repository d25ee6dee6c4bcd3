import type { Server } from 'bun'
import type { Logger } from '../log'
import { JSON_CONTENT_TYPE } from './json-response'

/** What `serveApp` needs of an Elysia app: its fetch handler. */
export interface Fetchable {
  fetch(request: Request): Response | Promise<Response>
}

export interface ServeOptions {
  port: number
  hostname: string
  /** Let several processes share the port (WORKERS); off, a port in use fails the start. */
  reusePort?: boolean
  /** The longest a request may take (database deadline plus filter callbacks): a connection is not cut before it. */
  requestBudgetMs?: number
  log: Logger
}

/**
 * Serves the app on a real socket. Routing must depend on the path alone, yet
 * Bun hands a request whose Host is missing, empty or odd (`GET / HTTP/1.0`,
 * `Host: a/b`) over with a bare path as its URL, and a `CONNECT` with its
 * authority (`127.0.0.1:3000`) as its URL. Every request therefore reaches the
 * app with an absolute URL built from its path, or gets a 400 here: nothing a
 * client sends can make the router, a log line or a hook parse a URL that is
 * not one.
 * @example const server = serveApp(createApp(deps), { port: 3000, hostname: '0.0.0.0', log })
 */
export function serveApp(app: Fetchable, options: ServeOptions): Server<undefined> {
  try {
    return listen(app, options)
  } catch (error) {
    throw (error as { code?: string }).code === 'EADDRINUSE' ? portInUse(options.port, options.hostname, error) : error
  }
}

/** The port is in use by another process; the start stops with one line naming it. */
export class PortInUseError extends Error {}

/** @example throw portInUse(3000, '0.0.0.0', error) */
export function portInUse(port: number, hostname: string, cause: unknown): PortInUseError {
  return new PortInUseError(`PORT ${port} on HOST ${hostname} is in use by another process (${(cause as { code?: string }).code ?? String(cause)}).`)
}

function listen(app: Fetchable, options: ServeOptions): Server<undefined> {
  return Bun.serve({
    port: options.port,
    hostname: options.hostname,
    reusePort: options.reusePort ?? false,
    development: false,
    // Seconds a connection may be silent, a request in progress included: never less than a
    // request's own budget, so that a slow answer ends in its 503, not a reset (Bun's limit: 255).
    idleTimeout: Math.min(255, Math.max(30, Math.ceil((options.requestBudgetMs ?? 0) / 1000) + 5)),
    fetch(request) {
      const routable = withAbsoluteUrl(request)
      // The server knows the peer of the request it was handed, not of a copy (C52).
      if (routable !== request && routable !== null) copiedFrom.set(routable, request)
      if (routable) return app.fetch(routable)
      options.log.info('request', { method: request.method, status: 400, reason: 'the request target is not a path' })
      return edgeError(400, 'Bad request.')
    },
    // The app answers its own errors; this is the last line if it ever throws.
    error(error) {
      options.log.error('request failed outside the app', { error })
      return edgeError(500, 'Internal server error.')
    },
  })
}

const copiedFrom = new WeakMap<Request, Request>()

/**
 * The address of the connection a request came on (C52's client), or null
 * when the server does not know it.
 * @example peerAddress(server, request) // '192.0.2.7'
 */
export function peerAddress(server: Server<undefined>, request: Request): string | null {
  return server.requestIP(copiedFrom.get(request) ?? request)?.address ?? null
}

/**
 * The request with an absolute `http://` URL, or null when its target is not a
 * path at all (the authority-form of CONNECT). Bun refuses the asterisk-form
 * (`OPTIONS *`) itself with a 400.
 */
export function withAbsoluteUrl(request: Request): Request | null {
  const url = request.url
  if (url.startsWith('http://') || url.startsWith('https://')) return request
  if (!url.startsWith('/')) return null
  try {
    return new Request(`http://localhost${url}`, request)
  } catch {
    // A method the Request constructor refuses (TRACE, TRACK) on a bare path.
    return null
  }
}

function edgeError(status: number, message: string): Response {
  return new Response(JSON.stringify({ error: message }), {
    status,
    headers: {
      'Content-Type': JSON_CONTENT_TYPE,
      'X-Content-Type-Options': 'nosniff',
      'X-Request-Id': crypto.randomUUID(),
      Connection: 'close',
    },
  })
}
