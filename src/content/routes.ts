import { Elysia } from 'elysia'
import type { AppDependencies } from '../app'
import type { CachedRead, Loaded } from '../cache/content-cache'
import { methodNotAllowed, notFound } from '../http/errors'
import { cacheControl, ifNoneMatchMatches } from '../http/http-caching'
import { JSON_CONTENT_TYPE } from '../http/json-response'
import { ALLOWED_METHODS } from '../http/response-headers'
import { applyItemFilters, schemaMismatchHandler } from '../hooks/apply-item-filters'
import { createFilterContext } from '../hooks/context'
import type { FilterContext } from '../hooks/extension'
import { toEntryModel } from '../hooks/model'
import { FilterRegistry } from '../hooks/registry'
import { envelope, loadEntryAnswer, loadListAnswer, render, type ContentAnswer, type RenderedBody } from './content-answer'
import { toItem } from './map-item'
import { readLanguage, readListStart, readSlug, readType } from './parameters'
import { EntryParams, ListQuery, ShowQuery, TypeParams } from './schemas'

/** The content API's paths, as Elysia writes them; src/docs/openapi-document.ts describes them. */
export const LIST_PATH = '/api/v1/content/:type'
export const SHOW_PATH = '/api/v1/content/:type/:slug'

/**
 * The content API: `GET /api/v1/content/{type}` and `GET /api/v1/content/{type}/{slug}`.
 * Each request reads top to bottom: parameters → the answer (from the cache, or one
 * statement → map) → filter chain → respond with its caching headers (C32–C34).
 */
export function contentRoutes({ sql, config, log, filters = new FilterRegistry(), cache, liveCounts }: AppDependencies) {
  const publicUrl = new URL(config.publicUrl).origin
  const run = { timeoutMs: config.hookTimeoutMs, onSchemaMismatch: schemaMismatchHandler(config.hookSchemaMismatch, log) }
  const answerOptions = (type: string, lang: string | undefined) => ({
    sql,
    mediaBaseUrl: config.mediaBaseUrl,
    withModel: !filters.isEmpty,
    timeoutMs: config.databaseTimeoutMs,
    publicUrl: config.publicUrl,
    type,
    lang,
  })

  /**
   * The cache's slot, keyed by route, type, resolved language and the rest of
   * the request (C35). Without a cache (CACHE=off) every answer is loaded, and says BYPASS.
   */
  async function readAnswer(route: string, type: string, lang: string | undefined, rest: unknown[], load: () => Promise<Loaded<ContentAnswer>>): Promise<CachedRead<ContentAnswer>> {
    if (cache) {
      const language = cache.resolveLanguage(lang)
      return cache.read(JSON.stringify([route, type, language, ...rest]), language, load)
    }
    const startedAt = performance.now()
    const loaded = await load()
    return { value: loaded.value, status: 'BYPASS', ageSeconds: 0, expiresAt: startedAt + loaded.expiresInMs }
  }

  /** The hook's place: after mapping, before the response (C24–C31). With no callback it costs nothing (C28). */
  async function filteredBody(request: Request, headers: Record<string, unknown>, route: FilterContext['route'], answer: ContentAnswer): Promise<RenderedBody> {
    if (answer.rendered) return answer.rendered
    // Callbacks may change what they are given in place: each request gets its own copy of the cached rows.
    const rows = structuredClone(answer.rows)
    const items = rows.map((row) => toItem(row, config.mediaBaseUrl))
    const { context, headersRead } = createFilterContext(request, { language: answer.languages.selected ?? '', defaultLanguage: answer.languages.default ?? '', route, publicUrl })
    const models = rows.map((row) => toEntryModel(row, config.mediaBaseUrl))
    const filtered = await applyItemFilters(filters, items, models, context, run)
    if (headersRead.size) headers.vary = appendVary(headers.vary, headersRead)
    return render(envelope(filtered, answer.meta))
  }

  /** C32–C34: ETag, 304, Cache-Control up to the next go-live, Surrogate-Key, X-Cache and Age. */
  async function respond(request: Request, set: { headers: Record<string, unknown> }, route: FilterContext['route'], read: CachedRead<ContentAnswer>): Promise<Response> {
    const answer = read.value
    const { body, etag } = await filteredBody(request, set.headers, route, answer)
    Object.assign(set.headers, {
      etag,
      'cache-control': cacheControl(config.cacheMaxAge, read.expiresAt),
      'surrogate-key': answer.surrogateKeys,
      'x-cache': read.status,
    })
    if (read.status === 'HIT') set.headers.age = String(read.ageSeconds)
    if (ifNoneMatchMatches(request.headers.get('if-none-match'), etag)) {
      delete set.headers['content-type']
      return new Response(null, { status: 304 })
    }
    // C39: where the walk goes on, with the body it belongs to.
    if (answer.link) set.headers.link = answer.link
    return new Response(body, { status: answer.status, headers: { 'content-type': JSON_CONTENT_TYPE } })
  }

  return new Elysia({ name: 'content-routes' })
    .get(
      LIST_PATH,
      async ({ params, query, request, set }) => {
        const { start, perPage } = readListStart(query)
        const type = readType(params.type)
        const lang = readLanguage(query.lang)
        const countByScan = liveCounts?.countByScan(type) ?? false
        const key = [perPage, start.page, start.cursor?.position ?? null, countByScan]
        const read = await readAnswer('list', type, lang, key, () => loadListAnswer({ ...answerOptions(type, lang), countByScan, perPage, start }))
        return respond(request, set, 'service.api.content.index', read)
      },
      { transform: markUndecodable, params: TypeParams, query: ListQuery },
    )
    .get(
      SHOW_PATH,
      async ({ params, query, request, set }) => {
        // A slug that can match nothing still goes to the database: the type is checked first (C5).
        const type = readType(params.type)
        const lang = readLanguage(query.lang)
        const slug = readSlug(params.slug)
        const read = await readAnswer('show', type, lang, [slug], () => loadEntryAnswer({ ...answerOptions(type, lang), slug }))
        return respond(request, set, 'service.api.content.show', read)
      },
      { transform: markUndecodable, params: EntryParams, query: ShowQuery },
    )
    .all(LIST_PATH, ({ request }) => rejectMethod(request))
    .all(SHOW_PATH, ({ request }) => rejectMethod(request))
}

/**
 * Elysia hands over a path segment that is not valid percent-encoding as null.
 * It becomes NUL, a value that matches nothing, so that such a type is an
 * unknown type (C5) and such a slug is "Not found." after the type check (C20).
 */
function markUndecodable({ params }: { params: Record<string, string | null> }): void {
  for (const name of Object.keys(params)) params[name] ??= '\u0000'
}

/** C3: any method but GET, HEAD and OPTIONS on an API path. */
function rejectMethod(request: Request): never {
  throw request.method === 'OPTIONS' ? notFound() : methodNotAllowed(ALLOWED_METHODS)
}

/** C30: adds the headers read by callbacks to whatever Vary already holds (CORS may have set Origin). */
function appendVary(current: unknown, names: Set<string>): string {
  const present = typeof current === 'string' && current ? current.split(',').map((name) => name.trim()) : []
  const lower = new Set(present.map((name) => name.toLowerCase()))
  return [...present, ...[...names].filter((name) => !lower.has(name))].join(', ')
}
