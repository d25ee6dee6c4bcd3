import { afterAll, describe, expect, test } from 'bun:test'
import { createConfig, lintDocument, makeDocumentFromString, BaseResolver } from '@redocly/openapi-core'
import { Validator } from '@seriousme/openapi-schema-validator'
import { createTestDatabase } from './support/database'
import { testApp } from './support/app'
import { addEntry } from './support/fixtures'
import { fetchOpenApiText, readingTime, registryOf } from './support/openapi'

// Read as plain JSON, the way a client sees it.
const document: Record<string, any> = JSON.parse(await fetchOpenApiText())
const extended: Record<string, any> = JSON.parse(await fetchOpenApiText(await registryOf(readingTime)))
const LIST = '/api/v1/content/{type}'
const SHOW = '/api/v1/content/{type}/{slug}'
const C12_KEYS = ['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'excerpt', 'meta_title', 'meta_description', 'featured_image', 'terms']

/** Every value in a JSON tree with the key that holds it. */
function* entries(value: unknown, key = ''): Generator<[string, unknown]> {
  yield [key, value]
  if (value !== null && typeof value === 'object') for (const [name, child] of Object.entries(value)) yield* entries(child, name)
}

describe('the OpenAPI document at /api/v1/openapi.json', () => {
  test('is a valid OpenAPI 3.1 document, with and without an extension that declares its schema', async () => {
    for (const candidate of [document, extended]) {
      const validator = new Validator()
      const result = await validator.validate(candidate)
      expect(result.errors).toBeUndefined()
      expect(result.valid).toBe(true)
      expect(validator.version).toBe('3.1')
    }
  })

  test('Redocly lint (recommended rules, offline) finds no error; the only warnings are the known ones', async () => {
    const config = await createConfig({ extends: ['recommended'] })
    for (const candidate of [document, extended]) {
      const problems = await lintDocument({ document: makeDocumentFromString(JSON.stringify(candidate), '/openapi.json'), config, externalRefResolver: new BaseResolver() })
      expect(problems.filter((problem) => problem.severity === 'error')).toEqual([])
      // Known and true: the read-only methods answer only 405, the probes no 4xx, no license is chosen,
      // and the tests' PUBLIC_URL is an example.com address.
      const warnings = new Set(problems.map((problem) => problem.ruleId))
      expect([...warnings].sort()).toEqual(['info-license', 'no-server-example.com', 'operation-2xx-response', 'operation-4xx-response'])
    }
  })

  test('is byte-identical across instances whatever they served before', async () => {
    const db = await createTestDatabase()
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    const quiet = testApp(db.url)
    const busy = testApp(db.url, {}, await registryOf(readingTime))
    const plain = testApp(db.url)
    afterAll(async () => {
      for (const api of [quiet, busy, plain]) await api.close()
      await db.sql.end()
    })
    const before = (await quiet.get('/api/v1/openapi.json')).text
    // A history that answers every status of every route, with and without extensions.
    for (const api of [busy, plain]) {
      for (const [method, path] of [
        ['GET', '/api/v1/content/post?per_page=5&page=1&lang=fr'],
        ['GET', '/api/v1/content/post/hello'],
        ['GET', '/api/v1/content/nope'],
        ['GET', '/api/v1/content/post?page=0'],
        ['HEAD', '/api/v1/content/post'],
        ['DELETE', '/api/v1/content/post/hello'],
        ['OPTIONS', '/api/v1/content/post'],
        ['GET', '/healthz'],
        ['GET', '/readyz'],
        ['GET', '/nope'],
      ]) {
        await api.get(path, { method })
      }
    }
    const after = (await plain.get('/api/v1/openapi.json')).text
    const later = testApp(db.url)
    const fresh = (await later.get('/api/v1/openapi.json')).text
    await later.close()
    expect(after).toBe(before)
    expect(fresh).toBe(before)
    expect((await quiet.get('/api/v1/openapi.json')).text).toBe(before)
    expect(JSON.parse(before)).toEqual(document)
    expect((await busy.get('/api/v1/openapi.json')).text).toBe(JSON.stringify(extended))
  })

  test('what the reference page shows starts with what to try, and carries no rule numbers of ours (they are the tests\' names, C46)', () => {
    expect(document.info.description.split('\n\n')[1]).toStartWith('Try first: `GET /api/v1/content/post`')
    expect(JSON.stringify(document).match(/(?<![\w-])C\d{1,2}(?!\w)/g)).toBeNull()
  })

  test('OpenAPI 3.1 natively: no `nullable`, null only through anyOf or type arrays', () => {
    for (const candidate of [document, extended]) {
      const keys = [...entries(candidate)].map(([key]) => key)
      expect(keys).not.toContain('nullable')
    }
    expect(document.components.schemas.ContentItem.properties.published_at.anyOf).toEqual([expect.objectContaining({ type: 'string', format: 'date-time' }), { type: 'null' }])
    // C44: an item is whole, or holds the keys `fields` named; null when an extension withheld it (C26).
    const item = { anyOf: [{ $ref: '#/components/schemas/ContentItem' }, { $ref: '#/components/schemas/ContentItemFields' }] }
    expect(document.components.schemas.ContentList.properties.data.items).toEqual({ anyOf: [item, { type: 'null' }] })
    expect(document.components.schemas.ContentEntry.properties.data).toEqual({ anyOf: [item, { type: 'null' }] })
  })

  test('named component schemas; the item is exactly C12 (and alternates and highlights when asked, C45, C55), closed', () => {
    expect(Object.keys(document.components.schemas)).toEqual([
      'ContentItem', 'ContentItemFields', 'Author', 'FeaturedImage', 'Term', 'Alternate', 'Highlights', 'ListMeta', 'ContentList', 'ContentEntry', 'SyncPage',
      'Language', 'LanguageList', 'ContentTypeSummary', 'ContentTypeList', 'Taxonomy', 'TaxonomyList', 'TermSummary', 'TermList', 'ApiIndex',
      'Status', 'Readiness', 'WebhookEntryPublished', 'WebhookEntryUpdated', 'WebhookEntryUnpublished', 'WebhookContentChanged', 'Error',
    ])
    const item = document.components.schemas.ContentItem
    expect(item.required).toEqual(C12_KEYS)
    expect(Object.keys(item.properties)).toEqual([...C12_KEYS, 'alternates', 'highlights'])
    expect(item.properties.alternates).toMatchObject({ type: 'array', items: { $ref: '#/components/schemas/Alternate' } })
    expect(document.components.schemas.Alternate).toMatchObject({ required: ['language', 'slug'], additionalProperties: false })
    expect(item.properties.highlights.anyOf).toEqual([{ $ref: '#/components/schemas/Highlights' }, { type: 'null' }])
    expect(document.components.schemas.Highlights).toMatchObject({ required: ['title', 'excerpt'], additionalProperties: false })
    // C44: the same keys, none required.
    const fields = document.components.schemas.ContentItemFields
    expect([Object.keys(fields.properties), fields.required, fields.additionalProperties]).toEqual([Object.keys(item.properties), undefined, false])
    expect(item.additionalProperties).toBe(false)
    expect(item.properties.id).toEqual({ type: 'integer' })
    expect(item.properties.author.anyOf[0]).toEqual({ $ref: '#/components/schemas/Author' })
    expect(item.examples[0].slug).toBe('shipping-a-content-api')
  })

  test("the item is the default one changed by the installed extensions' declarations", () => {
    const item = extended.components.schemas.ContentItem
    expect(Object.keys(item.properties)).toEqual([...C12_KEYS, 'alternates', 'highlights', 'reading_time_minutes'])
    expect(item.required).toEqual([...C12_KEYS.filter((key) => key !== 'excerpt'), 'reading_time_minutes'])
    expect(item.properties.reading_time_minutes).toEqual({ minimum: 1, type: 'integer' })
    expect(item.properties.excerpt).toEqual(document.components.schemas.ContentItem.properties.excerpt)
    // The example stays valid: it gains a value of each added field.
    expect(item.examples[0].reading_time_minutes).toBe(1)
  })

  test('operations read well in generated code and keep their route names', () => {
    const index = document.paths[LIST].get
    const show = document.paths[SHOW].get
    expect([index.operationId, index['x-route-name']]).toEqual(['listContent', 'service.api.content.index'])
    expect([show.operationId, show['x-route-name']]).toEqual(['getContent', 'service.api.content.show'])
    expect([document.paths['/healthz'].get.operationId, document.paths['/readyz'].get.operationId]).toEqual(['checkLiveness', 'checkReadiness'])
  })

  test('page and per_page are integers from 1; per_page says it is clamped to 100', () => {
    const parameters = document.components.parameters
    expect(parameters.Page).toMatchObject({ name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } })
    expect(parameters.PerPage).toMatchObject({ name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, default: 20 } })
    expect(parameters.PerPage.description).toContain('clamped to 100')
    const refs = document.paths[LIST].get.parameters.map((parameter: any) => parameter.$ref)
    expect(refs).toEqual(['ContentType', 'Page', 'PerPage', 'After', 'Lang', 'Term', 'Author', 'Search', 'Order', 'Fields', 'Include', 'IfNoneMatch'].map((name) => `#/components/parameters/${name}`))
    // C39: the cursor of a Link header, a string of base64url characters.
    expect(parameters.After).toMatchObject({ name: 'after', in: 'query', schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' } })
  })

  test('C40–C42: term, author, search and order are described with their limits, and every 400 message of the list is listed', () => {
    const parameters = document.components.parameters
    const term = new RegExp(parameters.Term.schema.pattern)
    expect(['category:news', 'category:news,tag:bun', 'tag:a:b'].every((value) => term.test(value))).toBe(true)
    expect(['news', ':news', 'category:', 'category:news,', ''].some((value) => term.test(value))).toBe(false)
    expect(parameters.Author).toMatchObject({ name: 'author', in: 'query', schema: { type: 'integer', minimum: 1 } })
    expect(parameters.Search).toMatchObject({ name: 'search', in: 'query', schema: { type: 'string', maxLength: 200 } })
    expect(parameters.Order).toMatchObject({ name: 'order', in: 'query', schema: { type: 'string', enum: ['relevance', 'date'] } })
    const messages = document.components.responses.BadParameter.content['application/json'].examples
    expect(JSON.stringify(messages)).toContain('The term parameter must be a comma-separated list of taxonomy:slug pairs.')
    expect(JSON.stringify(messages)).toContain('The order parameter must be relevance or date.')
  })

  test('C44/C45: fields lists every key an item can have, the extensions\' declared ones included; include lists alternates and highlights; both routes list their 400s', () => {
    const keys = (candidate: any) => new RegExp(candidate.components.parameters.Fields.schema.pattern)
    expect(['id', 'id,slug,title', 'title, id', 'id,,title,', '', 'alternates', 'id,highlights'].every((value) => keys(document).test(value))).toBe(true)
    expect(['body', 'id,body', 'ID', 'reading_time_minutes', 'id;title'].some((value) => keys(document).test(value))).toBe(false)
    expect(keys(extended).test('id,reading_time_minutes')).toBe(true)
    expect(extended.components.parameters.Fields.description).toContain('`reading_time_minutes`')
    expect(document.components.parameters.Fields.description).not.toContain('reading_time_minutes')
    expect(document.components.parameters.Include).toMatchObject({ name: 'include', in: 'query', schema: { type: 'string' } })
    const include = new RegExp(document.components.parameters.Include.schema.pattern)
    expect(['alternates', 'highlights', 'alternates,highlights', 'highlights,alternates'].every((value) => include.test(value))).toBe(true)
    expect(['', 'alternates,', 'terms', ' highlights'].some((value) => include.test(value))).toBe(false)
    for (const path of [LIST, SHOW]) {
      const operation = document.paths[path].get
      expect(operation.parameters.map((parameter: any) => parameter.$ref)).toEqual(expect.arrayContaining(['#/components/parameters/Fields', '#/components/parameters/Include']))
    }
    const showMessages = JSON.stringify(document.paths[SHOW].get.responses['400'])
    const listMessages = JSON.stringify(document.components.responses.BadParameter)
    for (const messages of [showMessages, listMessages]) {
      expect(messages).toContain('The fields parameter names an unknown field: ')
      expect(messages).toContain('The include parameter must be a comma-separated list of: alternates, highlights.')
    }
  })

  test('servers is the origin of PUBLIC_URL, from the settings the app was created with', async () => {
    expect(document.servers).toEqual([{ url: 'https://cms.example.com', description: 'This installation (PUBLIC_URL)' }])
    const other = JSON.parse(await fetchOpenApiText(undefined, { PUBLIC_URL: 'https://api.example.org:8443/' }))
    expect(other.servers[0].url).toBe('https://api.example.org:8443')
  })

  test('every status a route answers is documented; 405 only under the methods that get it', () => {
    expect(Object.keys(document.paths[LIST].get.responses)).toEqual(['200', '304', '400', '404', '500', '503'])
    expect(Object.keys(document.paths[SHOW].get.responses)).toEqual(['200', '304', '400', '404', '500', '503'])
    // C32: a 304 carries the ETag and Cache-Control it revalidated, and no body.
    expect(document.components.responses.NotModified.content).toBeUndefined()
    expect(Object.keys(document.components.responses.NotModified.headers)).toEqual(['X-Request-Id', 'Vary', 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age'])
    for (const path of [LIST, SHOW]) {
      expect(Object.keys(document.paths[path])).toEqual(['get', 'head', 'options', 'post', 'put', 'patch', 'delete'])
      for (const method of ['post', 'put', 'patch', 'delete']) {
        expect(document.paths[path][method].responses).toEqual({ '405': { $ref: '#/components/responses/MethodNotAllowed' } })
      }
    }
    // Issue 37: the path's own parameters open each of its operations' (Swagger UI fills in only those).
    for (const method of ['get', 'head', 'options', 'delete']) {
      expect(document.paths[SHOW][method].parameters.slice(0, 2)).toEqual([{ $ref: '#/components/parameters/ContentType' }, { $ref: '#/components/parameters/Slug' }])
    }
    expect(document.components.responses.MethodNotAllowed.headers.Allow).toEqual({ $ref: '#/components/headers/Allow' })
    expect(document.components.headers.Allow.schema).toEqual({ type: 'string', const: 'GET, HEAD, OPTIONS' })
  })

  test('response headers are documented: request id, Vary, Retry-After, Allow and the caching headers of C32–C34', () => {
    expect(Object.keys(document.components.headers)).toEqual([
      'X-Request-Id', 'Vary', 'Retry-After', 'Allow', 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Link', 'Age',
      'Access-Control-Allow-Origin', 'Access-Control-Allow-Methods', 'Access-Control-Allow-Headers', 'Access-Control-Max-Age', 'Location',
    ])
    const names = (response: any) => Object.keys(response.headers)
    expect(names(document.paths[LIST].get.responses['200'])).toEqual(['X-Request-Id', 'Vary', 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age', 'Link'])
    expect(names(document.paths[SHOW].get.responses['404'])).toEqual(['X-Request-Id', 'Vary', 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age'])
    expect(names(document.components.responses.ServiceUnavailable)).toEqual(['X-Request-Id', 'Vary', 'Retry-After', 'Cache-Control'])
    expect(names(document.components.responses.BadParameter)).toEqual(['X-Request-Id', 'Vary', 'Cache-Control'])
  })
})

describe('/docs', () => {
  test('is HTML with charset=utf-8 and loads Swagger UI from the service itself', async () => {
    const api = testApp('postgres://unused@127.0.0.1:1/unused')
    const page = await api.get('/docs')
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8'])
    expect(page.text).toContain('<script src="/docs/assets/swagger-ui-bundle.js">')
    expect(page.text).toContain("url: '/api/v1/openapi.json'")
    expect(page.text).not.toMatch(/https?:\/\//)
    const spec = await api.get('/api/v1/openapi.json')
    expect(spec.headers.get('content-type')).toBe('application/json; charset=utf-8')
    await api.close()
  })
})
