import { formatTimestamp, mediaUrl } from '../content/map-item'
import type { Item } from '../content/schemas'
import type { EntryRow } from '../content/statement-fragments'
import type { EntryModel } from './extension'
import type { RegisteredFilter } from './registry'

/**
 * Maps an entry row loaded with its model (C25) to the filter hook's second
 * argument: the entry's own columns and content type, the author, and the
 * relations the statement loaded (C54: those some callback declares). Its
 * timestamps are the item's (C13), formatted once. Pure.
 * @example toEntryModel(row, toItem(row, mediaBaseUrl), 'https://cms.example.com/media').fieldValues
 */
export function toEntryModel(row: EntryRow, item: Pick<Item, 'published_at' | 'created_at'>, mediaBaseUrl: string): EntryModel {
  const model = row.model
  if (!model) throw new Error('The entry was loaded without its model: pass the model parts to the statement.')
  const { translations, shown_translation, terms, image, field_values } = model
  // The parts no callback declared are left out: their views throw when read (src/hooks/declared-reads.ts).
  const entry: Partial<EntryModel> = {
    id: row.id,
    content_type: model.content_type,
    status: 'published',
    published_at: item.published_at,
    created_at: item.created_at,
    updated_at: formatTimestamp(model.updated_at),
    author_id: model.author_id,
    featured_image_id: model.featured_image_id,
  }
  if (translations) entry.translations = translations
  if (shown_translation !== undefined) entry.shownTranslation = shown_translation
  entry.author = row.author
  if (terms) entry.terms = terms
  if (image !== undefined) {
    entry.featuredImage =
      image === null
        ? null
        : { ...image, url: mediaUrl(image.path, mediaBaseUrl), variants: image.variants.map((variant) => ({ ...variant, url: mediaUrl(variant.path, mediaBaseUrl) })) }
  }
  if (field_values) entry.fieldValues = field_values
  return entry as EntryModel
}

/**
 * Each callback's second argument for each row (C25, C54): `models[f][i]` is
 * what the f-th callback in running order reads of the i-th row (`items[i]`
 * its item). Built once per answer and frozen; a callback that may read
 * everything shares the models.
 * @example modelsFor(registry.filters, rows, items, 'https://cms.example.com/media')[0][0].terms
 */
export function modelsFor(filters: readonly RegisteredFilter[], rows: readonly EntryRow[], items: readonly Item[], mediaBaseUrl: string): readonly (readonly EntryModel[])[] {
  const models = rows.map((row, index) => deepFreeze(toEntryModel(row, items[index]!, mediaBaseUrl)))
  return filters.map((filter) => (filter.viewOf === null ? models : models.map(filter.viewOf)))
}

/**
 * Freezes a value and everything it holds, so that a callback cannot change
 * what every other request is handed (C25: `content` is shared).
 * @example deepFreeze(toEntryModel(row, mediaBaseUrl))
 */
export function deepFreeze<Value>(value: Value): Value {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value
  Object.freeze(value)
  // Every model of a page is frozen: no array of values per object, and no call per string (issue 45).
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) freezeInner(value[index])
  } else {
    for (const key in value) if (Object.hasOwn(value, key)) freezeInner(value[key])
  }
  return value
}

function freezeInner(value: unknown): void {
  if (typeof value === 'object' && value !== null) deepFreeze(value)
}
