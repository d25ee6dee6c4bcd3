import { defineExtension, t } from '#vitrine/extension'

/**
 * Adds `body` (HTML) from the same translation as the item's title (C14): the
 * selected language's row, else the default language's, else null.
 */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, content) => ({ ...data, body: content.shownTranslation?.body ?? null }), {
    reads: ['shownTranslation'],
    schema: { add: { body: t.Union([t.String({ description: 'HTML' }), t.Null()]) } },
  })
})
