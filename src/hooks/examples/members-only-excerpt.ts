import { defineExtension } from '#vitrine/extension'

/**
 * Removes `excerpt` unless the request carries an `X-Member` header. Reading
 * the header through the context adds `Vary: x-member` to the response, so a
 * shared cache keeps the two variants apart. It declares the removal: the
 * OpenAPI document then shows `excerpt` as no longer required.
 */
export default defineExtension(({ addFilter }) => {
  addFilter(
    'service/api/content-item',
    (data, _content, context) => {
      if (context.request.headers.has('x-member')) return data
      const { excerpt: _excerpt, ...rest } = data
      return rest
    },
    // It reads nothing of the model: the page's statement loads none of it (C54).
    { reads: [], schema: { remove: ['excerpt'] } },
  )
})
