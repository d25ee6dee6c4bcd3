import { formatTimestamp, mediaUrl } from '../content/map-item'
import type { EntryRow } from '../content/statement-fragments'
import type { EntryModel } from './extension'

/**
 * Maps an entry row loaded with its model (C25) to the filter hook's second argument. Pure.
 * @example toEntryModel(row, 'https://cms.example.com/media').fieldValues
 */
export function toEntryModel(row: EntryRow, mediaBaseUrl: string): EntryModel {
  const model = row.model
  if (!model) throw new Error('The entry was loaded without its model: pass withModel to the statement.')
  return {
    id: row.id,
    content_type: model.content_type,
    status: 'published',
    published_at: row.published_at === null ? null : formatTimestamp(row.published_at),
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(model.updated_at),
    author_id: model.author_id,
    featured_image_id: model.featured_image_id,
    translations: model.translations,
    author: row.author,
    terms: model.terms,
    featuredImage:
      model.image === null
        ? null
        : {
            ...model.image,
            url: mediaUrl(model.image.path, mediaBaseUrl),
            variants: model.image.variants.map((variant) => ({ ...variant, url: mediaUrl(variant.path, mediaBaseUrl) })),
          },
    fieldValues: model.field_values,
  }
}

/**
 * Freezes a value and everything it holds, so that a callback cannot change
 * what every other request is handed (C25: `content` is shared).
 * @example deepFreeze(toEntryModel(row, mediaBaseUrl))
 */
export function deepFreeze<Value>(value: Value): Value {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}
