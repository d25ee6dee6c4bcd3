import type { SlotAnswer } from '../cache/answer-slot'
import { ANY_LANGUAGE, type Loaded } from '../cache/content-cache'
import { ANY_TYPE } from '../cache/answer-store'
import { expiresInMs, listsTag, render, typeTag, type RenderedBody } from '../content/content-answer'
import type { Sql } from '../db/connect'
import { listContentTypes, listLanguages, listTaxonomies, listTerms, type TermListOptions } from './statements'
import type { TermList } from './schemas'

/** An answer of the discovery routes (C46): always its final bytes, no filter callback changes it. */
export interface DiscoveryAnswer extends SlotAnswer {
  rendered: RenderedBody
}

interface Options {
  sql: Sql
  timeoutMs: number
}

/**
 * `GET /api/v1/languages`. A change of the languages table changes everything
 * (0002): the answer depends on no content type.
 * @example await loadLanguagesAnswer({ sql, timeoutMs: 5000 })
 */
export async function loadLanguagesAnswer({ sql, timeoutMs }: Options): Promise<Loaded<DiscoveryAnswer>> {
  const languages = await listLanguages(sql, timeoutMs)
  return answer(200, { data: languages }, 'languages', null, null)
}

/** `GET /api/v1/taxonomies`: as the languages, a change of taxonomies changes everything. */
export async function loadTaxonomiesAnswer({ sql, timeoutMs }: Options): Promise<Loaded<DiscoveryAnswer>> {
  const taxonomies = await listTaxonomies(sql, timeoutMs)
  return answer(200, { data: taxonomies }, 'taxonomies', null, null)
}

/**
 * `GET /api/v1/content-types`: every type's live total (C18), true until a
 * write to any type or the next go-live of any type.
 */
export async function loadContentTypesAnswer({ sql, timeoutMs, countByScan }: Options & { countByScan: readonly string[] }): Promise<Loaded<DiscoveryAnswer>> {
  const list = await listContentTypes(sql, { countByScan, timeoutMs })
  const tags = ['content-types', ...list.types.flatMap((type) => [typeTag(type.slug), listsTag(type.slug)])].join(' ')
  return answer(200, { data: list.types }, tags, ANY_TYPE, list.goLiveInSeconds)
}

/**
 * `GET /api/v1/taxonomies/{taxonomy}/terms`: one page of the terms live
 * entries carry (C46). An unknown `type` is checked first (C5: the content
 * type before anything else), then the taxonomy. With `type`, the answer is its type's; without, every type's.
 * @example await loadTermsAnswer({ sql, timeoutMs: 5000, taxonomy: 'tag', type: null, countByScan: [], page: 1, perPage: 20 })
 */
export async function loadTermsAnswer(
  options: Options & Pick<TermListOptions, 'taxonomy' | 'type' | 'countByScan' | 'heavy'> & { page: number; perPage: number },
): Promise<Loaded<DiscoveryAnswer>> {
  const { page, perPage, taxonomy, type } = options
  const result = await listTerms(options.sql, {
    ...options,
    limit: perPage,
    offset: Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER),
  })
  // `taxonomies` too: a write to the taxonomies or terms purges every terms answer (C51).
  const taxonomyTag = `taxonomy-${encodeURIComponent(taxonomy)} taxonomies`
  if (!result.typeExists) return answer(404, { error: 'Content type not found.' }, typeTag(type ?? ''), null, null)
  if (!result.taxonomyExists) return answer(404, { error: 'Taxonomy not found.' }, taxonomyTag, null, null)
  const meta = { current_page: page, last_page: Math.max(1, Math.ceil(result.total / perPage)), per_page: perPage, total: result.total }
  const body: TermList = { data: result.terms, meta }
  const tags = [taxonomyTag, ...result.typeSlugs.flatMap((slug) => [typeTag(slug), listsTag(slug)])].join(' ')
  return answer(200, body, tags, type === null ? ANY_TYPE : result.typeId, result.goLiveInSeconds)
}

function answer(status: 200 | 404, body: object, surrogateKeys: string, typeId: Loaded<DiscoveryAnswer>['typeId'], goLiveInSeconds: number | null): Loaded<DiscoveryAnswer> {
  const rendered = render(body)
  return {
    value: { status, surrogateKeys, rendered, link: null },
    bytes: rendered.body.byteLength + surrogateKeys.length * 2 + 256,
    typeId,
    expiresInMs: expiresInMs(goLiveInSeconds),
    language: ANY_LANGUAGE,
  }
}
