import { Elysia } from 'elysia'
import type { AppDependencies } from '../app-dependencies'
import type { CachedRead, Loaded } from '../cache/content-cache'
import { markUndecodable, rejectMethod } from '../http/api-route'
import type { FilterContext, ItemData } from '../hooks/extension'
import { FilterRegistry } from '../hooks/registry'
import type { AnswerSlot } from '../cache/answer-slot'
import { envelope, loadEntryAnswer, loadListAnswer, type ContentAnswer } from './content-answer'
import { selectFields } from './map-item'
import { answerPreparer } from './prepare-answer'
import { readItemShape, readLanguage, readListFilters, readListStart, readSlug, readType, type ItemShape, type ListFilters, type ListStart } from './parameters'
import { badRequest } from '../http/errors'
import { corsHeaders } from '../http/cors'
import { answerOutsideFramework, type RouteSettings } from '../http/request-policy'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { EntryParams, ListQuery, ShowQuery, TypeParams } from './schemas'

/** The content API's paths, as Elysia writes them; ./openapi-paths.ts declares them in the OpenAPI document. */
export const LIST_PATH = '/api/v1/content/:type'
export const SHOW_PATH = '/api/v1/content/:type/:slug'

/**
 * The content API: `GET /api/v1/content/{type}` and `GET /api/v1/content/{type}/{slug}`.
 * Each request reads top to bottom: parameters → the answer (from the cache, or one
 * statement → map) → filter chain → respond with its caching headers (C32–C34).
 * `routes` are the Elysia routes; `answerPlain` runs the same handlers for a
 * plain GET without the framework (issue 45: its routing, context, hooks and
 * checks were about a tenth of the process's CPU of an uncached entry, in
 * process); test/plain-get.test.ts holds both ways to the same answers.
 */
export function contentRoutes({ sql, config, log, filters = new FilterRegistry(), liveCounts, goLives }: AppDependencies, slot: AnswerSlot) {
  const prepare = answerPreparer({ config, log, filters })
  // C44: the keys `fields` may name, in the item's order: the default ones, `alternates`, those the extensions declare.
  const itemKeys = Object.keys(filters.itemSchema.properties)
  const answerOptions = (type: string, lang: string | undefined, shape: ItemShape) => ({
    sql,
    mediaBaseUrl: config.mediaBaseUrl,
    model: filters.modelParts,
    timeoutMs: config.databaseTimeoutMs,
    publicUrl: config.publicUrl,
    goLives,
    type,
    lang,
    shape,
  })

  /** The cache's slot, keyed by route, type, resolved language and the rest of the request (C35). */
  async function readAnswer(route: string, type: string, lang: string | undefined, rest: unknown[], load: () => Promise<Loaded<ContentAnswer>>): Promise<CachedRead<ContentAnswer>> {
    const language = slot.resolveLanguage(lang)
    return slot.read([route, type, language, ...rest], language, load)
  }

  /** C32–C34 and C39, through the cache's slot, which keeps the output for the next request (C38). */
  async function respond(request: Request, set: RouteSettings, route: FilterContext['route'], read: CachedRead<ContentAnswer>, shape: ItemShape): Promise<Response> {
    const body = { select: (items: (ItemData | null)[]) => selectFields(items, shape.fields), envelope: (items: readonly (object | null)[]) => envelope(items, read.value.meta) }
    const { output, reads } = await prepare(request, route, read.value, body)
    return slot.send(request, set, read, output, reads)
  }

  type Route<Params> = { params: Params; query: Record<string, string | undefined>; request: Request; set: RouteSettings }

  async function list({ params, query, request, set }: Route<{ type: string }>): Promise<Response> {
    const { start, perPage } = readListStart(query)
    const filters = readListFilters(query)
    checkCursorOrder(start, filters)
    const shape = readItemShape(query, itemKeys)
    const type = readType(params.type)
    const lang = readLanguage(query.lang)
    const countByScan = liveCounts?.countByScan(type) ?? false
    const key = [perPage, start.page, start.cursor?.position ?? null, countByScan, filters, shape]
    const read = await readAnswer('list', type, lang, key, () => loadListAnswer({ ...answerOptions(type, lang, shape), countByScan, perPage, start, filters }))
    return respond(request, set, 'service.api.content.index', read, shape)
  }

  async function show({ params, query, request, set }: Route<{ type: string; slug: string }>): Promise<Response> {
    const shape = readItemShape(query, itemKeys)
    // A slug that can match nothing still goes to the database: the type is checked first (C5).
    const type = readType(params.type)
    const lang = readLanguage(query.lang)
    const slug = readSlug(params.slug)
    const read = await readAnswer('show', type, lang, [slug, shape], () => loadEntryAnswer({ ...answerOptions(type, lang, shape), slug }))
    return respond(request, set, 'service.api.content.show', read, shape)
  }

  const outside = answerOutsideFramework(log, config.cacheMaxAge, corsHeaders(config))
  const listQuery = TypeCompiler.Compile(ListQuery)
  const showQuery = TypeCompiler.Compile(ShowQuery)

  return {
    routes: new Elysia({ name: 'content-routes' })
      .get(LIST_PATH, list, { transform: markUndecodable, params: TypeParams, query: ListQuery })
      .get(SHOW_PATH, show, { transform: markUndecodable, params: EntryParams, query: ShowQuery })
      .all(LIST_PATH, ({ request }) => rejectMethod(request))
      .all(SHOW_PATH, ({ request }) => rejectMethod(request)),
    /**
     * A plain GET of either route (plainContentRequest) answered without the framework, by the
     * same handler, with the same headers, errors and log line (answerOutsideFramework); null for
     * any other request, which the framework answers.
     */
    answerPlain(request: Request): Promise<Response> | null {
      const plain = request.method === 'GET' ? plainContentRequest(request.url) : null
      if (plain === null) return null
      const { type, slug, query } = plain
      if (slug === undefined) return listQuery.Check(query) ? outside(request, (set) => list({ params: { type }, query, request, set })) : null
      return showQuery.Check(query) ? outside(request, (set) => show({ params: { type, slug }, query, request, set })) : null
    },
  }
}

/** A content route's request that needs no decoding: its path's type (and slug), and its query. */
export interface PlainContentRequest {
  type: string
  slug?: string
  query: Record<string, string>
}

const CONTENT_PREFIX = '/api/v1/content/'

/**
 * The type, slug and query of a content route's request when the framework
 * would read them as they are: nothing to decode (no `%`, no `+`), each query
 * parameter given once with `=`, no empty segment. Null for anything else,
 * which the framework reads (C20's undecodable segments, repeated parameters, …).
 * @example plainContentRequest('http://localhost/api/v1/content/post/hello?lang=fr') // { type: 'post', slug: 'hello', query: { lang: 'fr' } }
 */
export function plainContentRequest(url: string): PlainContentRequest | null {
  // Where the framework's router finds the path (app.ts: the first '/' past `http://`).
  const pathStart = url.indexOf('/', 7)
  if (pathStart === -1 || !url.startsWith(CONTENT_PREFIX, pathStart)) return null
  const queryStart = url.indexOf('?', pathStart)
  const path = url.slice(pathStart + CONTENT_PREFIX.length, queryStart === -1 ? undefined : queryStart)
  if (path.includes('%') || path.includes('+')) return null
  const segments = path.split('/')
  if (segments.length > 2 || segments.some((segment) => segment === '')) return null
  const query: Record<string, string> = Object.create(null)
  if (queryStart !== -1) {
    for (const pair of url.slice(queryStart + 1).split('&')) {
      const equals = pair.indexOf('=')
      if (equals <= 0 || pair.includes('%') || pair.includes('+')) return null
      const name = pair.slice(0, equals)
      if (name in query) return null
      query[name] = pair.slice(equals + 1)
    }
  }
  return segments.length === 1 ? { type: segments[0]!, query } : { type: segments[0]!, slug: segments[1]!, query }
}

/**
 * C42: a cursor of a walk by relevance holds a rank, one of a walk by date
 * does not; each continues only its own order.
 */
function checkCursorOrder(start: ListStart, filters: ListFilters): void {
  if (!start.cursor) return
  const byRelevance = filters.search !== null && filters.order === 'relevance'
  if ((start.cursor.position.rank !== undefined) !== byRelevance) throw badRequest('The after parameter is not a valid cursor.')
}
