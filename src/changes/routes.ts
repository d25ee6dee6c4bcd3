import { Elysia, t } from 'elysia'
import type { AppDependencies } from '../app-dependencies'
import type { CachedRead, Loaded } from '../cache/content-cache'
import type { AnswerSlot } from '../cache/answer-slot'
import type { ContentAnswer } from '../content/content-answer'
import { answerPreparer } from '../content/prepare-answer'
import { readLanguage, readPositiveInteger, readType } from '../content/parameters'
import { TypeParams } from '../content/schemas'
import { markUndecodable, rejectMethod } from '../http/api-route'
import { FilterRegistry } from '../hooks/registry'
import { DEFAULT_SYNC_PER_PAGE, loadSyncAnswer, MAX_SYNC_PER_PAGE, syncBody } from './sync-answer'
import { decodeSyncToken, expiredToken, type SyncToken } from './sync-token'

/** The sync route, as Elysia writes it; ./openapi-paths.ts declares it in the OpenAPI document. */
export const SYNC_PATH = '/api/v1/sync/:type'

export const SyncQuery = t.Object(
  { per_page: t.Optional(t.String()), lang: t.Optional(t.String()), token: t.Optional(t.String()) },
  { additionalProperties: true },
)

const DAY_MS = 86_400_000

/**
 * `GET /api/v1/sync/{type}` (C48): parameters → the answer (from the cache,
 * or one statement → map) → filter chain → respond, as the content routes.
 * Items are the list's, and callbacks see the list's route name: a copy kept
 * by sync holds what the lists show.
 */
export function syncRoutes({ sql, config, filters = new FilterRegistry(), log, liveCounts }: AppDependencies, slot: AnswerSlot) {
  const prepare = answerPreparer({ config, log, filters })

  /** The cache's slot (C35), keyed by type, resolved language, page size and token: the token names the page. */
  async function readAnswer(type: string, lang: string | undefined, key: unknown[], load: () => Promise<Loaded<ContentAnswer>>): Promise<CachedRead<ContentAnswer>> {
    const language = slot.resolveLanguage(lang)
    return slot.read(['sync', type, language, ...key], language, load)
  }

  return new Elysia({ name: 'sync-routes' })
    .get(
      SYNC_PATH,
      async ({ params, query, request, set }) => {
        const perPage = Math.min(readPositiveInteger('per_page', query.per_page, DEFAULT_SYNC_PER_PAGE), MAX_SYNC_PER_PAGE)
        const token = query.token === undefined ? null : decodeSyncToken(query.token)
        if (token) checkRetention(token, config.syncRetentionDays)
        const type = readType(params.type)
        const lang = readLanguage(query.lang)
        // Its kept counts drifted: written with the triggers off, so the change log missed writes too (sql/change-log.md).
        if (token && liveCounts?.countByScan(type)) throw expiredToken()
        const load = () =>
          loadSyncAnswer({ sql, mediaBaseUrl: config.mediaBaseUrl, publicUrl: config.publicUrl, model: filters.modelParts, timeoutMs: config.databaseTimeoutMs, type, lang, perPage, token, retentionDays: config.syncRetentionDays })
        const read = await readAnswer(type, lang, [perPage, query.token ?? null], load)
        // Items are the lists' (C48), and so is the route callbacks see.
        const body = { select: (items: readonly (object | null)[]) => items, envelope: (items: readonly (object | null)[]) => syncBody(items, read.value.sync!) }
        const { output, reads } = await prepare(request, 'service.api.content.index', read.value, body)
        return slot.send(request, set, read, output, reads)
      },
      { transform: markUndecodable, params: TypeParams, query: SyncQuery },
    )
    .all(SYNC_PATH, ({ request }) => rejectMethod(request))
}

/** C48: a token older than SYNC_RETENTION_DAYS is expired, whatever the log still holds. */
function checkRetention(token: SyncToken, retentionDays: number): void {
  const oldest = Date.now() - retentionDays * DAY_MS
  for (const mark of [token.since, token.until]) {
    if (mark !== null && Date.parse(mark.at) < oldest) throw expiredToken()
  }
}
