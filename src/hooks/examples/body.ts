import { defineExtension, t } from '../extension'

/**
 * Adds `body` (HTML) from the same translation as the item's title (C14): the
 * selected language's row, else the default language's, else null.
 */
export default defineExtension(({ addFilter }) => {
  addFilter(
    'service/api/content-item',
    (data, content, context) => {
      const translation =
        content.translations.find((row) => row.language_code === context.language) ??
        content.translations.find((row) => row.language_code === context.defaultLanguage)
      return { ...data, body: translation?.body ?? null }
    },
    { schema: { add: { body: t.Union([t.String({ description: 'HTML' }), t.Null()]) } } },
  )
})
