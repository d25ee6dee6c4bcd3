import { Elysia } from 'elysia'
import type { Config } from './config'
import type { Sql } from './db/connect'
import type { LiveCountCheck } from './content/live-count-check'
import type { ReadReplicas } from './db/replicas'
import { AnswerSlot, type AnswerCache } from './cache/answer-slot'
import { contentRoutes } from './content/routes'
import { syncRoutes } from './changes/routes'
import { eventRoutes } from './changes/event-routes'
import type { EventFeed } from './changes/event-feed'
import { discoveryRoutes } from './discovery/routes'
import { demoMedia } from './demo/media'
import { corsPolicy } from './http/cors'
import { apiDocumentation } from './docs/openapi'
import { apiIndex } from './docs/api-index'
import { buildOpenApiDocument } from './docs/openapi-document'
import { healthRoutes } from './http/health'
import { requestPolicy } from './http/request-policy'
import { routeTemplates } from './http/route-template'
import { recordRequest } from './metrics/families'
import { FilterRegistry } from './hooks/registry'
import type { Logger } from './log'

export interface AppDependencies {
  sql: Sql
  config: Config
  log: Logger
  /** The filter hook's callbacks; none by default. */
  filters?: FilterRegistry
  /** The response cache (C35); without it every answer is loaded (X-Cache: BYPASS). */
  cache?: AnswerCache
  /** Which types' live entries are counted one by one, their kept count having drifted (C18); none without it. */
  liveCounts?: LiveCountCheck
  /** The event stream's feed (C49); without it, the stream answers 503. */
  events?: EventFeed
  /** Closes the connection a request came on, at once (the server's; none in process, under tests). */
  closeConnection?: (request: Request) => void
  /** DATABASE_READ_URLS (C50): the replicas `sql`'s content reads are routed through; /readyz says which serve. */
  replicas?: ReadReplicas
}

/** The whole HTTP service, not listening. */
export interface App {
  /** Answers a request: what `Bun.serve` calls (a kept answer comes back at once). */
  fetch(request: Request): Response | Promise<Response>
  /** The same, always a promise: what tests call. */
  handle(request: Request): Promise<Response>
}

/**
 * The whole HTTP service, not listening: `main.ts` serves it, tests call `app.handle(request)`.
 * A request whose answer the cache keeps is answered by the cache's slot; all
 * others by the Elysia app (its routes end in the same slot).
 * @example const response = await createApp(deps).handle(new Request('http://localhost/healthz'))
 */
export function createApp(dependencies: AppDependencies): App {
  const { config, filters = new FilterRegistry() } = dependencies
  // Built here, once: from this app's settings and extensions, never from what it served.
  const document = buildOpenApiDocument({ publicUrl: config.publicUrl, itemSchema: filters.itemSchema, demoMedia: config.demoMedia })
  const slot = new AnswerSlot(dependencies)
  // The router finds the path after the first '/' past `http://`, whatever the Host
  // (Elysia's default skips 11 characters, which misroutes hosts of 1 to 3 characters).
  const app = new Elysia({ name: 'vitrine', normalize: false, handler: { standardHostname: false } })
    .use(requestPolicy(dependencies.log, config.cacheMaxAge))
    .use(corsPolicy(config))
    .use(apiDocumentation(document))
    .use(apiIndex(document, config.publicUrl, slot))
    .use(healthRoutes(dependencies))
    .use(contentRoutes({ ...dependencies, filters }, slot))
    .use(syncRoutes({ ...dependencies, filters }, slot))
    .use(eventRoutes(dependencies))
    .use(discoveryRoutes(dependencies, slot))
    .use(config.demoMedia ? demoMedia() : new Elysia({ name: 'no-demo-media' }))
  const routeOf = routeTemplates(app.routes.map((route) => route.path))
  const answer = (request: Request) => slot.answer(request) ?? app.handle(request)
  // C53: with METRICS_PORT, every request is counted here, where a cache hit and the routes' answers both pass.
  const measured = (request: Request) => {
    const startedAt = performance.now()
    const hit = slot.answer(request)
    if (hit) {
      recordRequest(request.method, routeOf(request.url), hit.status, (performance.now() - startedAt) / 1000)
      return hit
    }
    return app.handle(request).then((response) => {
      recordRequest(request.method, routeOf(request.url), response.status, (performance.now() - startedAt) / 1000)
      return response
    })
  }
  const fetch = config.metricsPort === undefined ? answer : measured
  return { fetch, handle: async (request) => fetch(request) }
}
