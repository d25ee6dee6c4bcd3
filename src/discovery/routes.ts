import { Elysia } from 'elysia'
import type { AppDependencies } from '../app-dependencies'
import { renderedOutput, type AnswerSlot, type ResponseSettings } from '../cache/answer-slot'
import { ANY_LANGUAGE, type CachedRead } from '../cache/content-cache'
import { readPagination, readType } from '../content/parameters'
import { DEEP_OFFSET } from '../content/list-statement'
import { markUndecodable, rejectMethod } from '../http/api-route'
import { taxonomyNotFound } from '../http/errors'
import { loadContentTypesAnswer, loadLanguagesAnswer, loadTaxonomiesAnswer, loadTermsAnswer, type DiscoveryAnswer } from './discovery-answer'
import { TaxonomyParams, TermQuery } from './schemas'

/** The discovery routes' paths, as Elysia writes them; ./openapi-paths.ts declares them in the OpenAPI document. */
export const LANGUAGES_PATH = '/api/v1/languages'
export const CONTENT_TYPES_PATH = '/api/v1/content-types'
export const TAXONOMIES_PATH = '/api/v1/taxonomies'
export const TERMS_PATH = '/api/v1/taxonomies/:taxonomy/terms'

/**
 * C46: what a site is made of, for menus, language switchers and tag clouds:
 * its languages, content types with their live totals, taxonomies, and a
 * taxonomy's terms with theirs. Each request reads top to bottom: parameters
 * → the answer (from the cache, or one statement → rendered) → respond with
 * the content routes' caching headers (C32–C34), through the same slot.
 */
export function discoveryRoutes({ sql, config, liveCounts }: AppDependencies, slot: AnswerSlot) {
  const timeoutMs = config.databaseTimeoutMs
  const respond = (request: Request, set: ResponseSettings, read: CachedRead<DiscoveryAnswer>) => slot.send(request, set, read, renderedOutput(read.value), null)

  return new Elysia({ name: 'discovery-routes' })
    .get(LANGUAGES_PATH, async ({ request, set }) => respond(request, set, await slot.read(['languages'], ANY_LANGUAGE, () => loadLanguagesAnswer({ sql, timeoutMs }))))
    .get(TAXONOMIES_PATH, async ({ request, set }) => respond(request, set, await slot.read(['taxonomies'], ANY_LANGUAGE, () => loadTaxonomiesAnswer({ sql, timeoutMs }))))
    .get(CONTENT_TYPES_PATH, async ({ request, set }) => {
      // C18: the types whose kept counts drifted are counted one by one; the key says which.
      const countByScan = liveCounts?.driftedTypes() ?? []
      const read = await slot.read(['content-types', countByScan], ANY_LANGUAGE, () => loadContentTypesAnswer({ sql, timeoutMs, countByScan }))
      return respond(request, set, read)
    })
    .get(
      TERMS_PATH,
      async ({ params, query, request, set }) => {
        const { page, perPage } = readPagination(query)
        const type = query.type === undefined ? null : readType(query.type)
        const taxonomy = readTaxonomy(params.taxonomy)
        const drifted = liveCounts?.driftedTypes() ?? []
        const countByScan = type === null ? drifted : drifted.filter((slug) => slug === type)
        // C47: a deep page sorts what it skips, and a type counted one by one reads its entries.
        const heavy = countByScan.length > 0 || (page - 1) * perPage >= DEEP_OFFSET
        const load = () => loadTermsAnswer({ sql, timeoutMs, taxonomy, type, countByScan, heavy, page, perPage })
        return respond(request, set, await slot.read(['terms', taxonomy, type, page, perPage, countByScan], ANY_LANGUAGE, load))
      },
      { transform: markUndecodable, params: TaxonomyParams, query: TermQuery },
    )
    .all(LANGUAGES_PATH, ({ request }) => rejectMethod(request))
    .all(CONTENT_TYPES_PATH, ({ request }) => rejectMethod(request))
    .all(TAXONOMIES_PATH, ({ request }) => rejectMethod(request))
    .all(TERMS_PATH, ({ request }) => rejectMethod(request))
}

/** C46: a taxonomy that cannot exist (NUL: PostgreSQL text holds none) is an unknown one. */
function readTaxonomy(taxonomy: string): string {
  if (taxonomy.includes('\u0000')) throw taxonomyNotFound()
  return taxonomy
}
