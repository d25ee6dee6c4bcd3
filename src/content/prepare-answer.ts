import type { AppDependencies } from '../app-dependencies'
import type { PreparedAnswer } from '../cache/answer-slot'
import { applyItemFilters, schemaMismatchHandler } from '../hooks/apply-item-filters'
import { createFilterContext, headersRead, type RequestReads } from '../hooks/context'
import type { FilterContext, ItemData } from '../hooks/extension'
import { modelsFor } from '../hooks/model'
import type { FilterRegistry } from '../hooks/registry'
import { render, type ContentAnswer } from './content-answer'
import { toItem } from './map-item'

/** What a route makes of the chain's output: the items it keeps (C44's `fields`), and the envelope around them. */
export interface AnswerBody {
  select(items: (ItemData | null)[]): readonly (object | null)[]
  envelope(items: readonly (object | null)[]): object
}

/**
 * The hook's place in every route that answers items (the content routes,
 * sync): after mapping, before the response (C24–C31). With no callback it
 * costs nothing (C28). Each request maps its own items from the answer's
 * rows; the models are built once per answer and frozen (C25). The body's
 * selection applies to the chain's output (C44).
 * @example const prepare = answerPreparer({ config, log, filters }); const { output } = await prepare(request, 'service.api.content.index', answer, body)
 */
export function answerPreparer({ config, log, filters }: Pick<AppDependencies, 'config' | 'log'> & { filters: FilterRegistry }) {
  const publicUrl = new URL(config.publicUrl).origin
  const run = { timeoutMs: config.hookTimeoutMs, onSchemaMismatch: schemaMismatchHandler(config.hookSchemaMismatch, log) }
  return async function prepare(request: Request, route: FilterContext['route'], answer: ContentAnswer, body: AnswerBody): Promise<{ output: PreparedAnswer; reads: RequestReads | null }> {
    const headers = { status: answer.status, surrogateKey: answer.surrogateKeys, link: answer.link }
    if (answer.rendered) return { output: { ...answer.rendered, ...headers, varyHeaders: [] }, reads: null }
    const items = answer.rows.map((row) => toItem(row, config.mediaBaseUrl))
    // Shared by every request the answer serves (C25, C37): frozen, with or without the cache, so that a callback behaves alike in both.
    answer.models ??= modelsFor(filters.filters, answer.rows, items, config.mediaBaseUrl)
    const filtering = createFilterContext(request, { language: answer.languages.selected ?? '', defaultLanguage: answer.languages.default ?? '', route, publicUrl })
    const filtered = await applyItemFilters(filters, items, answer.models, filtering, run)
    const rendered = render(body.envelope(body.select(filtered)))
    return { output: { ...rendered, ...headers, varyHeaders: headersRead(filtering.reads) }, reads: filtering.reads }
  }
}
