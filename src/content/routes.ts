import { Elysia } from 'elysia'
import type { AppDependencies } from '../app'
import { contentTypeNotFound, methodNotAllowed, notFound } from '../http/errors'
import { JSON_CONTENT_TYPE } from '../http/request-policy'
import { toItem } from './map-item'
import { readPagination } from './parameters'
import { findLiveEntryBySlug, listLiveEntries } from './queries'
import { EntryParams, ErrorResponse, ListQuery, ListResponse, ShowQuery, ShowResponse, TypeParams } from './schemas'

const LIST_PATH = '/api/v1/content/:type'
const SHOW_PATH = '/api/v1/content/:type/:slug'
const ALLOW = 'GET, HEAD, OPTIONS'

/**
 * The content API: `GET /api/v1/content/{type}` and `GET /api/v1/content/{type}/{slug}`.
 * Each request reads top to bottom: parameters → one statement → map → respond.
 */
export function contentRoutes({ sql, config }: AppDependencies) {
  return new Elysia({ name: 'content-routes' })
    .get(
      LIST_PATH,
      async ({ params, query, set }) => {
        const { page, perPage } = readPagination(query)
        const result = await listLiveEntries(sql, { type: params.type, lang: query.lang, limit: perPage, offset: Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER) })
        if (!result.typeExists) throw contentTypeNotFound()
        set.headers['content-type'] = JSON_CONTENT_TYPE
        return {
          data: result.rows.map((row) => toItem(row, config.mediaBaseUrl)),
          meta: {
            current_page: page,
            last_page: Math.max(1, Math.ceil(result.total / perPage)),
            per_page: perPage,
            total: result.total,
          },
        }
      },
      {
        params: TypeParams,
        query: ListQuery,
        response: { 200: ListResponse, 400: ErrorResponse, 404: ErrorResponse },
        detail: { operationId: 'service.api.content.index', summary: 'List published entries of a content type' },
      },
    )
    .get(
      SHOW_PATH,
      async ({ params, query, set }) => {
        // C20: a slug holding "/" (sent as %2F) matches nothing, but the type is still checked first (C5).
        const slug = params.slug.includes('/') ? null : params.slug
        const result = await findLiveEntryBySlug(sql, { type: params.type, lang: query.lang, slug })
        if (!result.typeExists) throw contentTypeNotFound()
        if (result.row === null) throw notFound()
        set.headers['content-type'] = JSON_CONTENT_TYPE
        return { data: toItem(result.row, config.mediaBaseUrl) }
      },
      {
        params: EntryParams,
        query: ShowQuery,
        response: { 200: ShowResponse, 404: ErrorResponse },
        detail: { operationId: 'service.api.content.show', summary: 'Get one published entry by slug' },
      },
    )
    .all(LIST_PATH, ({ request }) => rejectMethod(request))
    .all(SHOW_PATH, ({ request }) => rejectMethod(request))
}

/** C3: any method but GET, HEAD and OPTIONS on an API path. */
function rejectMethod(request: Request): never {
  throw request.method === 'OPTIONS' ? notFound() : methodNotAllowed(ALLOW)
}
