import { defineExtension, t, type DeclaredModel, type FilterContext } from '#vitrine/extension'

/**
 * Adds the entry's custom field values as `fields: { key: value }`. For each
 * field: the value in the selected language, else the untranslated value,
 * else the default language's value. It reads the field values only, and
 * says so: the page's statement then loads nothing else for it (C54).
 */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, content, context) => ({ ...data, fields: fieldsOf(content, context) }), {
    reads: ['fieldValues'],
    // Values are JSON of any kind: their schema is open.
    schema: { add: { fields: t.Record(t.String(), t.Unknown(), { description: 'Custom field values by key.' }) } },
  })
})

function fieldsOf(content: DeclaredModel<['fieldValues']>, context: FilterContext): Record<string, unknown> {
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
