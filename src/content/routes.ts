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
import { EntryParams, ListQuery, ShowQuery, TypeParams } from './schemas'

/** The content API's paths, as Elysia writes them; ./openapi-paths.ts declares them in the OpenAPI document. */
export const LIST_PATH = '/api/v1/content/:type'
export const SHOW_PATH = '/api/v1/content/:type/:slug'

/**
 * The content API: `GET /api/v1/content/{type}` and `GET /api/v1/content/{type}/{slug}`.
 * Each request reads top to bottom: parameters → the answer (from the cache, or one
 * statement → map) → filter chain → respond with its caching headers (C32–C34).
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
  async function respond(request: Request, set: { headers: Record<string, unknown>; status?: unknown }, route: FilterContext['route'], read: CachedRead<ContentAnswer>, shape: ItemShape): Promise<Response> {
    const body = { select: (items: (ItemData | null)[]) => selectFields(items, shape.fields), envelope: (items: readonly (object | null)[]) => envelope(items, read.value.meta) }
    const { output, reads } = await prepare(request, route, read.value, body)
    return slot.send(request, set, read, output, reads)
  }

  return new Elysia({ name: 'content-routes' })
    .get(
      LIST_PATH,
      async ({ params, query, request, set }) => {
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
      },
      { transform: markUndecodable, params: TypeParams, query: ListQuery },
    )
    .get(
      SHOW_PATH,
      async ({ params, query, request, set }) => {
        const shape = readItemShape(query, itemKeys)
        // A slug that can match nothing still goes to the database: the type is checked first (C5).
        const type = readType(params.type)
        const lang = readLanguage(query.lang)
        const slug = readSlug(params.slug)
        const read = await readAnswer('show', type, lang, [slug, shape], () => loadEntryAnswer({ ...answerOptions(type, lang, shape), slug }))
        return respond(request, set, 'service.api.content.show', read, shape)
      },
      { transform: markUndecodable, params: EntryParams, query: ShowQuery },
    )
    .all(LIST_PATH, ({ request }) => rejectMethod(request))
    .all(SHOW_PATH, ({ request }) => rejectMethod(request))
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
