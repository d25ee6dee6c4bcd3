import { defineExtension } from '#vitrine/extension'

/** The benchmark's trivial callback (C28): what registering one costs, and nothing more. */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data) => data)
})
