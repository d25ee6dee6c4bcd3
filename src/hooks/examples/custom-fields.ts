import { defineExtension, t, type EntryModel, type FilterContext } from '#vitrine/extension'

/**
 * Adds the entry's custom field values as `fields: { key: value }`. For each
 * field: the value in the selected language, else the untranslated value,
 * else the default language's value.
 */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, content, context) => ({ ...data, fields: fieldsOf(content, context) }), {
    // Values are JSON of any kind: their schema is open.
    schema: { add: { fields: t.Record(t.String(), t.Unknown(), { description: 'Custom field values by key.' }) } },
  })
})

function fieldsOf(content: EntryModel, context: FilterContext): Record<string, unknown> {
  const preference = [context.language, null, context.defaultLanguage]
  const fields: Record<string, unknown> = {}
  const rank: Record<string, number> = {}
  for (const value of content.fieldValues) {
    const at = preference.indexOf(value.language_code)
    if (at === -1 || (value.key in rank && rank[value.key] <= at)) continue
    fields[value.key] = value.value
    rank[value.key] = at
  }
  return fields
}
