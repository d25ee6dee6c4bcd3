import { Elysia } from 'elysia'
import type { AppDependencies } from './app-dependencies'
import { AnswerSlot } from './cache/answer-slot'
import { contentRoutes } from './content/routes'
import { syncRoutes } from './changes/routes'
import { eventRoutes } from './changes/event-routes'
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
import { ClientQuotas } from './quotas/client-quotas'
import { describeQuotas } from './quotas/openapi'

/** The whole HTTP service, not listening. */
export interface App {
  /** Answers a request: what `Bun.serve` calls (a kept answer comes back at once). */
  fetch(request: Request): Response | Promise<Response>
  /** The same, always a promise: what tests call. */
  handle(request: Request): Promise<Response>
}

/**
 * The whole HTTP service, not listening: `main.ts` serves it, tests call `app.handle(request)`.
 * A request whose answer the cache keeps is answered by the cache's slot; a
 * content route's plain GET (nothing to decode) by that route's handler without
 * the framework (contentRoutes' answerPlain, issue 45); all others by the
 * Elysia app (its routes end in the same slot). With a quota on
 * (C52), the client's quotas come before both.
 * @example const response = await createApp(deps).handle(new Request('http://localhost/healthz'))
 */
export function createApp(dependencies: AppDependencies): App {
  const { config, filters = new FilterRegistry() } = dependencies
  // Built here, once: from this app's settings and extensions, never from what it served.
  const document = describeQuotas(buildOpenApiDocument({ publicUrl: config.publicUrl, itemSchema: filters.itemSchema, demoMedia: config.demoMedia }), config)
  const quotas = ClientQuotas.of(config, dependencies.log, dependencies.peerAddress)
  const slot = new AnswerSlot({ ...dependencies, extraFields: quotas?.fieldsOfKept })
  const content = contentRoutes({ ...dependencies, filters }, slot)
  // The router finds the path after the first '/' past `http://`, whatever the Host
  // (Elysia's default skips 11 characters, which misroutes hosts of 1 to 3 characters).
  const app = new Elysia({ name: 'vitrine', normalize: false, handler: { standardHostname: false } })
    .use(requestPolicy(dependencies.log, config.cacheMaxAge))
    .use(corsPolicy(config))
    .use(apiDocumentation(document))
    .use(apiIndex(document, config.publicUrl, slot))
    .use(healthRoutes(dependencies))
    .use(content.routes)
    .use(syncRoutes({ ...dependencies, filters }, slot))
    .use(eventRoutes(dependencies))
    .use(discoveryRoutes(dependencies, slot))
    .use(config.demoMedia ? demoMedia() : new Elysia({ name: 'no-demo-media' }))
  // A content route's plain GET skips the framework, with the same handler (issue 45).
  const routed = (request: Request) => content.answerPlain(request) ?? app.handle(request)
  const answer = (request: Request) => slot.answer(request) ?? routed(request)
  const guarded = quotas ? quotas.guard(routed, (request, decorate) => slot.answer(request, decorate)) : answer
  const routeOf = routeTemplates(app.routes.map((route) => route.path))
  // C53: with METRICS_PORT, every request is counted here, where a cache hit, a 429 and the routes' answers all pass.
  // A hit names its route's template, kept with its output; other answers walk their URL.
  const measured = (request: Request) => {
    const startedAt = performance.now()
    slot.takeHitRoute()
    const answered = guarded(request)
    if (answered instanceof Response) {
      recordRequest(request.method, slot.takeHitRoute() ?? routeOf(request.url), answered.status, (performance.now() - startedAt) / 1000)
      return answered
    }
    return answered.then((response) => {
      recordRequest(request.method, routeOf(request.url), response.status, (performance.now() - startedAt) / 1000)
      return response
    })
  }
  if (config.metricsPort !== undefined) slot.nameRoutes(routeOf)
  const fetch = config.metricsPort === undefined ? guarded : measured
  return { fetch, handle: async (request) => fetch(request) }
}
