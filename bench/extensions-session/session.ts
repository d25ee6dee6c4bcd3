import { defineExtension, t } from '#vitrine/extension'

/**
 * Reads a header that has a new value on every request (a session token):
 * every request is a new variant (C38). bench/cache.ts floods the service with
 * it to show that memory stays within CACHE_MAX_MB and other answers stay kept.
 */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, _content, context) => ({ ...data, session: context.request.headers.get('x-session') ?? '' }), {
    schema: { add: { session: t.String() } },
  })
})
