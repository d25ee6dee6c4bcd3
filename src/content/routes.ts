import { Elysia, t } from 'elysia'
import type { AppDependencies } from '../app'
import { contentTypeNotFound, methodNotAllowed, notFound } from '../http/errors'
import { jsonResponse } from '../http/json-response'
import { applyItemFilters } from '../hooks/apply-item-filters'
import { createFilterContext } from '../hooks/context'
import type { FilterContext } from '../hooks/extension'
import { toEntryModel } from '../hooks/model'
import { FilterRegistry } from '../hooks/registry'
import { toItem } from './map-item'
import { readLanguage, readPagination, readSlug, readType } from './parameters'
import { findLiveEntryBySlug, listLiveEntries, type EntryRow, type Languages } from './queries'
import { EntryParams, ErrorResponse, ListQuery, ListResponse, ShowQuery, ShowResponse, TypeParams, type Item } from './schemas'

const LIST_PATH = '/api/v1/content/:type'
const SHOW_PATH = '/api/v1/content/:type/:slug'
const ALLOW = 'GET, HEAD, OPTIONS'

/** What any route may answer besides its own statuses (C3, C21, C22). */
const FAULTS = {
  405: t.Object({ error: t.Literal('Method not allowed.') }, { description: 'Any method but GET, HEAD and OPTIONS; the Allow header lists them.' }),
  500: t.Object({ error: t.Literal('Internal server error.') }, { description: 'An unexpected failure, or a failing extension.' }),
  503: t.Object({ error: t.Literal('Service unavailable.') }, { description: 'The database cannot be reached; see Retry-After.' }),
}

/**
 * The content API: `GET /api/v1/content/{type}` and `GET /api/v1/content/{type}/{slug}`.
 * Each request reads top to bottom: parameters → one statement → map → filter chain → respond.
 */
export function contentRoutes({ sql, config, filters = new FilterRegistry() }: AppDependencies) {
  /** The hook's place: after mapping, before the response (C24–C31). With no callback it costs nothing (C28). */
  async function filterItems(request: Request, headers: Record<string, unknown>, route: FilterContext['route'], languages: Languages, rows: EntryRow[]): Promise<(Item | null)[]> {
    const items = rows.map((row) => toItem(row, config.mediaBaseUrl))
    if (filters.isEmpty) return items
    const { context, headersRead } = createFilterContext(request, languages.selected ?? '', languages.default ?? '', route)
    const models = rows.map((row) => toEntryModel(row, config.mediaBaseUrl))
    const filtered = await applyItemFilters(filters, items, models, context, config.hookTimeoutMs)
    if (headersRead.size) headers.vary = appendVary(headers.vary, headersRead)
    // The schema documents the default shape; extensions may have reshaped it (service.md §6).
    return filtered as (Item | null)[]
  }

  return new Elysia({ name: 'content-routes' })
    .get(
      LIST_PATH,
      async ({ params, query, request, set }) => {
        const { page, perPage } = readPagination(query)
        const offset = Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER)
        const result = await listLiveEntries(sql, {
          type: readType(params.type),
          lang: readLanguage(query.lang),
          limit: perPage,
          offset,
          withModel: !filters.isEmpty,
          timeoutMs: config.databaseTimeoutMs,
        })
        if (!result.typeExists) throw contentTypeNotFound()
        const data = await filterItems(request, set.headers, 'service.api.content.index', result.languages, result.rows)
        return jsonResponse<typeof ListResponse.static>({
          data,
          meta: {
            current_page: page,
            last_page: Math.max(1, Math.ceil(result.total / perPage)),
            per_page: perPage,
            total: result.total,
          },
        })
      },
      {
        transform: markUndecodable,
        params: TypeParams,
        query: ListQuery,
        response: { 200: ListResponse, 400: ErrorResponse, 404: ErrorResponse, ...FAULTS },
        detail: {
          operationId: 'service.api.content.index',
          tags: ['content'],
          summary: 'List published entries of a content type',
          description: 'Live entries only (published, and their publication time has come), newest first: `published_at` descending with undated entries last, then `id` descending.',
        },
      },
    )
    .get(
      SHOW_PATH,
      async ({ params, query, request, set }) => {
        // A slug that can match nothing still goes to the database: the type is checked first (C5).
        const result = await findLiveEntryBySlug(sql, {
          type: readType(params.type),
          lang: readLanguage(query.lang),
          slug: readSlug(params.slug),
          withModel: !filters.isEmpty,
          timeoutMs: config.databaseTimeoutMs,
        })
        if (!result.typeExists) throw contentTypeNotFound()
        if (result.row === null) throw notFound()
        const [data] = await filterItems(request, set.headers, 'service.api.content.show', result.languages, [result.row])
        return jsonResponse<typeof ShowResponse.static>({ data })
      },
      {
        transform: markUndecodable,
        params: EntryParams,
        query: ShowQuery,
        response: { 200: ShowResponse, 404: ErrorResponse, ...FAULTS },
        detail: {
          operationId: 'service.api.content.show',
          tags: ['content'],
          summary: 'Get one published entry by slug',
          description: "The live entry whose slug in the selected language matches; else one with no translation in that language whose default-language slug matches. The lowest id wins a tie.",
        },
      },
    )
    .all(LIST_PATH, ({ request }) => rejectMethod(request), { detail: { hide: true } })
    .all(SHOW_PATH, ({ request }) => rejectMethod(request), { detail: { hide: true } })
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
  throw request.method === 'OPTIONS' ? notFound() : methodNotAllowed(ALLOW)
}

/** C30: adds the headers read by callbacks to whatever Vary already holds (CORS may have set Origin). */
function appendVary(current: unknown, names: Set<string>): string {
  const present = typeof current === 'string' && current ? current.split(',').map((name) => name.trim()) : []
  const lower = new Set(present.map((name) => name.toLowerCase()))
  return [...present, ...[...names].filter((name) => !lower.has(name))].join(', ')
}
