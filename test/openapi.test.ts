import { afterAll, describe, expect, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import createClient from 'openapi-fetch'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { connectDatabase } from '../src/db/connect'
import { createLogger } from '../src/log'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage } from './support/fixtures'
import { fetchOpenApiDocument, openapiTypes } from './support/openapi'
import type { paths } from './support/openapi-types'

// Read as plain JSON, the way a client sees it.
const document: Record<string, any> = await fetchOpenApiDocument()

describe('the OpenAPI document at /api/v1/openapi.json', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator()
    const result = await validator.validate(document)
    expect(result.errors).toBeUndefined()
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
  })

  test('has both operations under their route names, with every status code', () => {
    const index = document.paths['/api/v1/content/{type}'].get
    const show = document.paths['/api/v1/content/{type}/{slug}'].get
    expect([index.operationId, show.operationId]).toEqual(['service.api.content.index', 'service.api.content.show'])
    expect(Object.keys(index.responses).sort()).toEqual(['200', '400', '404', '405', '500', '503'])
    expect(Object.keys(show.responses).sort()).toEqual(['200', '404', '405', '500', '503'])
    expect(index.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(['path:type', 'query:page', 'query:per_page', 'query:lang'])
    // Only GET is documented: the 405 catch-alls are hidden.
    expect(Object.keys(document.paths['/api/v1/content/{type}'])).toEqual(['get'])
  })

  test('documents the item with its keys in order, an example, and room for fields extensions add', () => {
    const list = document.paths['/api/v1/content/{type}'].get.responses['200'].content['application/json'].schema
    const item = list.properties.data.items
    expect(item.required).toEqual(['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'excerpt', 'meta_title', 'meta_description', 'featured_image', 'terms'])
    expect(item.additionalProperties).toBe(true)
    expect(item.examples[0].slug).toBe('shipping-a-content-api')
    expect(item.properties.id.type).toBe('integer')
    expect(document.info.description).toContain('Extensions may add fields')
  })

  test('test/support/openapi-types.ts is what openapi-typescript generates today (else run `bun run openapi:types`)', async () => {
    const committed = await readFile(join(import.meta.dir, 'support', 'openapi-types.ts'), 'utf8')
    expect(committed).toBe(await openapiTypes())
  })
})

describe('a client generated from the document', () => {
  test('lists and fetches entries over HTTP through openapi-fetch', async () => {
    const db = await createTestDatabase()
    await addLanguage(db.sql, 'fr')
    const id = await addEntry(db.sql, { translations: { en: { title: 'Hello', slug: 'hello' }, fr: { title: 'Bonjour', slug: 'bonjour' } } })
    const config = loadConfig({ DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'silent' })
    const sql = connectDatabase(db.url)
    const app = createApp({ sql, config, log: createLogger('silent') }).listen({ port: 0, hostname: '127.0.0.1' })
    afterAll(async () => {
      await app.stop()
      await sql.end()
      await db.sql.end()
    })
    const client = createClient<paths>({ baseUrl: `http://127.0.0.1:${app.server!.port}` })

    const list = await client.GET('/api/v1/content/{type}', { params: { path: { type: 'post' }, query: { lang: 'fr', per_page: '10' } } })
    expect(list.response.status).toBe(200)
    const first = list.data!.data[0]!
    expect([first.id, first.title, list.data!.meta.per_page]).toEqual([id, 'Bonjour', 10])

    const single = await client.GET('/api/v1/content/{type}/{slug}', { params: { path: { type: 'post', slug: 'hello' } } })
    expect(single.data!.data!.slug).toBe('hello')

    const missing = await client.GET('/api/v1/content/{type}/{slug}', { params: { path: { type: 'post', slug: 'nope' } } })
    expect([missing.response.status, missing.error]).toEqual([404, { error: 'Not found.' }])
  })
})
