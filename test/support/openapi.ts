import { createApp } from '../../src/app'
import { loadConfig } from '../../src/config'
import { connectDatabase } from '../../src/db/connect'
import { defineExtension, t, type Extension } from '../../src/hooks/extension'
import { FilterRegistry } from '../../src/hooks/registry'
import { createLogger } from '../../src/log'

/**
 * The OpenAPI document's bytes, as a client downloads them from an app with
 * these callbacks. No database is needed for it.
 * @example const document = JSON.parse(await fetchOpenApiText(await registryOf(readingTime)))
 */
export async function fetchOpenApiText(filters = new FilterRegistry(), env: Record<string, string> = {}): Promise<string> {
  const config = loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused', PUBLIC_URL: 'https://cms.example.com', ...env })
  const sql = connectDatabase(config.databaseUrl!)
  const app = createApp({ sql, config, log: createLogger('silent'), filters })
  const response = await app.handle(new Request('http://localhost/api/v1/openapi.json'))
  await sql.end()
  return response.text()
}

/**
 * The registry that loading these extensions builds, as the loader would.
 * @example const filters = await registryOf(readingTime)
 */
export async function registryOf(...extensions: Extension[]): Promise<FilterRegistry> {
  const registry = new FilterRegistry()
  for (const extension of extensions) await extension(registry.apiFor('test extension'))
  return registry
}

/**
 * The extension of issue 12, declared as it asks: adds `reading_time_minutes`,
 * removes `excerpt` for readers without `X-Member`, and withholds (null) every
 * entry whose id is a multiple of 5, so that a document check meets all three.
 */
export const readingTime = defineExtension(({ addFilter }) => {
  addFilter(
    'service/api/content-item',
    (data, content, context) => {
      if (data.id! % 5 === 0) return null
      const translation = content.translations.find((row) => row.language_code === context.language) ?? content.translations.find((row) => row.language_code === context.defaultLanguage)
      const words = translation?.body?.split(/\s+/).filter(Boolean).length ?? 0
      if (!context.request.headers.has('x-member')) delete data.excerpt
      data.reading_time_minutes = Math.max(1, Math.round(words / 200))
      return data
    },
    { priority: 10, schema: { add: { reading_time_minutes: t.Integer({ minimum: 1 }) }, remove: ['excerpt'] } },
  )
})
