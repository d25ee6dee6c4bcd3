import type { Config } from '../config'
import { EVERY_ANSWER_TAG, type RenderedBody } from '../content/content-answer'
import { readOf, type RequestReads } from '../hooks/context'
import { corsOfReads } from '../http/cors'
import { cacheControl, ifNoneMatchMatches } from '../http/http-caching'
import { JSON_CONTENT_TYPE } from '../http/json-response'
import { logRequest, requestIdOf } from '../http/request-policy'
import type { Logger } from '../log'
import { recordCacheRequest } from '../metrics/families'
import type { CachedRead, CacheStatus, ContentCache, Loaded } from './content-cache'

/**
 * What the slot needs of an answer it keeps, whichever route made it: the
 * content routes' (src/content/content-answer.ts) and the discovery routes'.
 */
export interface SlotAnswer {
  status: 200 | 404
  /** C34. */
  surrogateKeys: string
  /** The body as sent, when no filter callback will change it. */
  rendered: RenderedBody | null
  /** C39, lists only. */
  link: string | null
}

/** The service's cache of answers, as the slot keeps them. */
export type AnswerCache = ContentCache<SlotAnswer, PreparedAnswer>

/** What a route's handler is given to set the response's status and headers with (Elysia's `set`). */
export interface ResponseSettings {
  headers: Record<string, unknown>
  status?: unknown
}

/**
 * One output of the content routes, ready to send: the bytes, their ETag and
 * the headers that belong to them. What the cache keeps per variant (C38).
 */
export interface PreparedAnswer extends RenderedBody {
  status: 200 | 404
  /** C34. */
  surrogateKey: string
  /** C39, lists only. */
  link: string | null
  /** The request headers the callbacks read, lower case (C30). */
  varyHeaders: readonly string[]
  /**
   * The headers every response made from this output has, built by the slot on first use when the
   * output is kept: with that slot's settings (CORS, Cache-Tag, quota fields). A cache has one slot.
   */
  sameHeaders?: SameHeaders
  /**
   * C53: the template of the route that made it, set when kept while the request metric is recorded
   * (AnswerSlot.nameRoutes). Every URL whose hits this output serves has that template: an answer's key
   * begins with its route's name, and a trailing slash takes the same template (route-template.ts).
   */
  route?: string
}

/** A kept output's headers that are the same for every request (each response copies them: cheaper than building them anew). */
interface SameHeaders {
  /** A 200 or 404 with the body. */
  full?: Headers
  /** A 304: no type, no Link. */
  notModified?: Headers
  /** `full` as a hit answers it in one second: with its Cache-Control, X-Cache and Age. */
  hit?: { headers: Headers; control: string; ageSeconds: number }
}

/**
 * Fields every response of the slot carries beside its own, while a quota is
 * on (C52, src/quotas/client-quotas.ts): those the same on every response,
 * added to an output's same headers, and what they change in `Cache-Control`.
 */
export interface ExtraFields {
  same(headers: Record<string, string>): void
  cacheControl(value: string): string
}

/** How the cache served the answer an output was computed from (C34). */
type Served = Pick<CachedRead<unknown>, 'status' | 'ageSeconds' | 'expiresAt'>

/** What keeping an output costs besides its body and the strings of its same headers: their structures and bookkeeping. */
const OUTPUT_BYTES = 1024

/**
 * The content cache as a slot in front of the routes (C35–C38). `answer`
 * serves a request whose output is kept, before the framework parses
 * anything: GET or HEAD of a request target that led to a kept answer, with
 * equal values of whatever computing that output read of the request. Every
 * other request takes the routes, which end in `respond`: the same response
 * from the same prepared output, which is kept for the next request.
 * @example const slot = new AnswerSlot({ cache, config, log }); return slot.answer(request) ?? app.handle(request)
 */
export class AnswerSlot {
  readonly #cache: AnswerCache | undefined
  readonly #cacheMaxAge: number
  readonly #log: Logger
  readonly #cors: ReturnType<typeof corsOfReads>
  /** C51: Cloudflare purges by `Cache-Tag`, the same tags comma-separated. */
  readonly #cacheTags: boolean
  readonly #extraFields: ExtraFields | undefined
  /** C53, with METRICS_PORT: a request URL's route template, and the template of the hit answered last (takeHitRoute). */
  #routeOf: ((url: string) => string) | undefined
  #hitRoute: string | undefined

  constructor({ cache, config, log, extraFields }: { cache?: AnswerCache; config: Pick<Config, 'cacheMaxAge' | 'corsOrigins' | 'purgeTargets'>; log: Logger; extraFields?: ExtraFields }) {
    this.#cache = cache
    this.#extraFields = extraFields
    this.#cacheMaxAge = config.cacheMaxAge
    this.#cacheTags = config.purgeTargets.some((target) => target.kind === 'cloudflare')
    this.#log = log
    this.#cors = corsOfReads(config)
  }

  /**
   * C53: from now on a kept output holds its route's template, found once as it is kept, and a hit
   * leaves it for the request metric (`takeHitRoute`): a hit's URL is not walked again.
   * @example slot.nameRoutes(routeTemplates(app.routes.map((route) => route.path)))
   */
  nameRoutes(routeOf: (url: string) => string): void {
    this.#routeOf = routeOf
  }

  /**
   * The route template of the hit `answer` made last, once: read right after a synchronous answer, it
   * names that answer's route (undefined when the slot did not answer, or its output has no template).
   */
  takeHitRoute(): string | undefined {
    const route = this.#hitRoute
    this.#hitRoute = undefined
    return route
  }

  /** The language a request's `lang` resolves to (C9), for its key; null (no cache, or the languages not known yet) bypasses the cache. */
  resolveLanguage(lang: string | undefined): string | null {
    return this.#cache?.resolveLanguage(lang) ?? null
  }

  /**
   * A route's answer from the cache, keyed by `key` (the route's name first,
   * then what selects its answer) and the resolved `language` (C35), or from
   * `load`. Without a cache (CACHE=off) every answer is loaded, and says BYPASS.
   * @example await slot.read(['languages'], ANY_LANGUAGE, () => loadLanguagesAnswer(options))
   */
  async read<Answer extends SlotAnswer>(key: readonly unknown[], language: string | null, load: () => Promise<Loaded<Answer>>): Promise<CachedRead<Answer>> {
    if (this.#cache) {
      const read = await this.#cache.read<Answer>(JSON.stringify(key), language, load)
      recordCacheRequest(read.status === 'HIT' ? 'hit' : read.status === 'MISS' ? 'miss' : 'bypass')
      return read
    }
    recordCacheRequest('bypass')
    const startedAt = performance.now()
    const loaded = await load()
    return { value: loaded.value, status: 'BYPASS', ageSeconds: 0, expiresAt: startedAt + loaded.expiresInMs, place: null }
  }

  /**
   * The route's response (`respond`), sent by the framework as it is: it
   * holds every header the request's policy set in `set` (the same request
   * id, nosniff, the type, CORS), so `set` is emptied. With anything in `set`,
   * the framework would build the response again around a stream of its body
   * and a copy of its headers (Elysia's mapResponse): about a tenth of the
   * process's time for an uncached single entry (issue 45). The log line reads
   * the status and the request id from the response.
   */
  send(request: Request, set: ResponseSettings, read: CachedRead<SlotAnswer>, output: PreparedAnswer, reads: RequestReads | null): Response {
    const response = this.respond(request, String(set.headers['X-Request-Id']), read, output, reads)
    set.headers = {}
    set.status = 200
    return response
  }

  /**
   * The response to a request whose output is kept, logged as the framework logs; null when the routes must answer.
   * `decorate` adds C52's fields to its headers: to the response's own copy on a hit in the same second as the
   * one before, else before it is made.
   */
  answer(request: Request, decorate?: (headers: Headers) => void): Response | null {
    const method = request.method
    if (this.#cache === undefined || (method !== 'GET' && method !== 'HEAD')) return null
    const startedAt = performance.now()
    const found = this.#cache.lookup(targetOf(request.url), (name) => readOf(request, name))
    if (found === undefined) return null
    recordCacheRequest('hit')
    const requestId = requestIdOf(request)
    const ageSeconds = Math.floor((startedAt - found.storedAt) / 1000)
    const response = this.#response(request, requestId, found.output, { status: 'HIT', ageSeconds, expiresAt: found.expiresAt }, method === 'HEAD', true, decorate)
    logRequest(this.#log, request, requestId, response.status, startedAt)
    this.#hitRoute = found.output.route
    return response
  }

  /**
   * The routes' response: `output` computed from `read`'s answer for this
   * request, kept for the next requests that agree on what it read, unless a
   * volatile callback ran (C38). The framework strips the body of a HEAD.
   */
  respond(request: Request, requestId: string, read: CachedRead<SlotAnswer>, output: PreparedAnswer, reads: RequestReads | null): Response {
    const kept = read.place !== null && !reads?.volatile
    if (kept) {
      // A plain answer's body is the answer's own: the output costs only its headers.
      // Its same headers (kept beside it) hold its keys, twice with Cache-Tag, and its Link.
      const headerBytes = output.surrogateKey.length * (this.#cacheTags ? 2 : 1) + (output.link?.length ?? 0)
      const bytes = (read.value.rendered === null ? output.body.byteLength : 0) + headerBytes + OUTPUT_BYTES
      if (this.#routeOf) output.route ??= this.#routeOf(request.url)
      this.#cache?.keep(read, targetOf(request.url), reads?.names ?? [], reads?.values ?? [], output, bytes)
    }
    return this.#response(request, requestId, output, read, false, kept)
  }

  /**
   * C29, C30, C32–C34 and C39: every header of a content answer, for a hit here as for the routes.
   * The output's same headers are copied (a native copy: building ten headers from an object costs
   * several times more), then what differs per request is set.
   */
  #response(request: Request, requestId: string, output: PreparedAnswer, served: Served, head: boolean, kept: boolean, decorate?: (headers: Headers) => void): Response {
    const notModified = ifNoneMatchMatches(request.headers.get('if-none-match'), output.etag)
    const computed = cacheControl(this.#cacheMaxAge, served.expiresAt)
    const control = this.#extraFields ? this.#extraFields.cacheControl(computed) : computed
    // A hit in the same second as the one before: its headers but the request's own are those of that one.
    const hit = kept && !notModified && served.status === 'HIT' ? output.sameHeaders?.hit : undefined
    const same = hit !== undefined && hit.control === control && hit.ageSeconds === served.ageSeconds
    const origin = this.#cors.allowedOrigin(request)
    if (same && !head) {
      // The response copies the kept headers as it is made; this request's own are set on its copy (one copy, not two).
      const response = new Response(output.body, { status: output.status, headers: hit.headers })
      this.#ownFields(response.headers, requestId, origin, decorate)
      return response
    }
    const headers = same ? new Headers(hit.headers) : this.#sameHeaders(output, notModified, kept)
    if (!same) {
      headers.set('Cache-Control', control)
      headers.set('X-Cache', served.status satisfies CacheStatus)
      if (served.status === 'HIT') headers.set('Age', String(served.ageSeconds))
      // Kept before anything of this request's own is set.
      if (kept && !notModified && served.status === 'HIT') output.sameHeaders!.hit = { headers: new Headers(headers), control, ageSeconds: served.ageSeconds }
    }
    if (head) headers.set('Content-Length', notModified ? '0' : String(output.body.byteLength))
    this.#ownFields(headers, requestId, origin, decorate)
    if (notModified) return new Response(null, { status: 304, headers })
    return new Response(head ? null : output.body, { status: output.status, headers })
  }

  /** What a response has of its request alone: C29's X-Request-Id, the allowed Origin of a CORS list, the quota's fields. */
  #ownFields(headers: Headers, requestId: string, origin: string | null, decorate: ((headers: Headers) => void) | undefined): void {
    headers.set('X-Request-Id', requestId)
    if (origin !== null) headers.set('Access-Control-Allow-Origin', origin)
    decorate?.(headers)
  }

  /** The output's same headers: a copy of those built once for a kept output, else built for this response alone. */
  #sameHeaders(output: PreparedAnswer, notModified: boolean, kept: boolean): Headers {
    const variant = notModified ? 'notModified' : 'full'
    const built = output.sameHeaders?.[variant]
    if (built !== undefined) return new Headers(built)
    const headers = new Headers(this.#sameFields(output, notModified))
    if (!kept) return headers
    ;(output.sameHeaders ??= {})[variant] = headers
    return new Headers(headers)
  }

  #sameFields(output: PreparedAnswer, notModified: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      'X-Content-Type-Options': 'nosniff',
      ...this.#cors.same,
      ETag: output.etag,
      'Surrogate-Key': `${output.surrogateKey} ${EVERY_ANSWER_TAG}`,
    }
    if (this.#cacheTags) headers['Cache-Tag'] = headers['Surrogate-Key']!.replaceAll(' ', ',')
    if (output.varyHeaders.length) headers.Vary = appendVary(headers.Vary, output.varyHeaders)
    this.#extraFields?.same(headers)
    if (notModified) return headers
    headers['Content-Type'] = JSON_CONTENT_TYPE
    if (output.link !== null) headers.Link = output.link
    return headers
  }
}

/**
 * The output of an answer that no filter callback changes: its bytes as they
 * are, with the headers that belong to them.
 * @example slot.send(request, set, read, renderedOutput(read.value), null)
 */
export function renderedOutput(answer: SlotAnswer & { rendered: RenderedBody }): PreparedAnswer {
  return { ...answer.rendered, status: answer.status, surrogateKey: answer.surrogateKeys, link: answer.link, varyHeaders: [] }
}

/**
 * The request target of a URL (path and query), as the router reads it: from
 * the first '/' after the scheme's '//'.
 * @example targetOf('http://localhost/api/v1/content/post?page=2') // '/api/v1/content/post?page=2'
 */
export function targetOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2)
  return slash === -1 ? '/' : url.slice(slash)
}

/** C30: adds the headers read by callbacks to whatever Vary already holds (CORS may have set Origin). */
function appendVary(current: string | undefined, names: readonly string[]): string {
  const present = current ? current.split(',').map((name) => name.trim()) : []
  const lower = new Set(present.map((name) => name.toLowerCase()))
  return [...present, ...names.filter((name) => !lower.has(name))].join(', ')
}
