import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createApp } from '../src/app'
import { loadConfig } from '../src/config'
import { openReadPool } from '../src/db/connect'
import { createLogger } from '../src/log'
import packageJson from '../package.json'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage, addTerm, clearContent } from './support/fixtures'
import { documentChecker } from './support/openapi-validation'

/**
 * C46 over HTTP: the discovery routes follow every rule of the content routes
 * (C3, C5–C8, C29, C32–C36), the index and the redirect, and the demo's images.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
const api = testApp(db.url)
const cached = await cachedTestApp(db.url)
const listed = testApp(db.url, { CORS_ORIGINS: 'https://app.example' })
afterAll(async () => {
  await api.close()
  await cached.close()
  await listed.close()
  await db.sql.end()
})
beforeEach(async () => {
  const cleared = cached.nextChange('entries')
  await clearContent(db.sql)
  await cleared
})

const TERMS = '/api/v1/taxonomies/tag/terms'
const ROUTES = ['/api/v1/languages', '/api/v1/content-types', '/api/v1/taxonomies', TERMS, '/api/v1']

/** Waits until the listener has heard every write committed so far (see cache.test.ts). */
async function settled() {
  const barrier = cached.nextChange('test_barrier')
  await db.sql`select pg_notify('vitrine_changes', 'test_barrier:*')`
  await barrier
}

describe('C46: the discovery routes answer as C46 says', () => {
  test('languages by code, content types by slug with live totals, taxonomies by slug, terms by name then id', async () => {
    const news = await addTerm(db.sql, 'category', 'News')
    const bun = await addTerm(db.sql, 'tag', 'Bun')
    const alpha = await addTerm(db.sql, 'tag', 'Alpha')
    await addTerm(db.sql, 'tag', 'Unused')
    await addEntry(db.sql, { termIds: [bun, news] })
    await addEntry(db.sql, { termIds: [alpha, bun] })
    await addEntry(db.sql, { type: 'page', termIds: [bun] })
    expect((await api.get('/api/v1/languages')).body).toEqual({ data: [{ code: 'en', name: 'English', is_default: true }, { code: 'fr', name: 'Français', is_default: false }] })
    const types = (await api.get('/api/v1/content-types')).body.data
    expect(types.map((type: any) => [type.slug, type.total])).toEqual([['page', 1], ['post', 2]])
    expect((await api.get('/api/v1/taxonomies')).body).toEqual({ data: [{ slug: 'category', name: 'category' }, { slug: 'tag', name: 'tag' }] })
    expect((await api.get(TERMS)).body).toEqual({
      data: [
        { id: alpha, name: 'Alpha', slug: 'alpha', total: 1 },
        { id: bun, name: 'Bun', slug: 'bun', total: 3 },
      ],
      meta: { current_page: 1, last_page: 1, per_page: 20, total: 2 },
    })
    expect((await api.get(`${TERMS}?type=page`)).body.data).toEqual([{ id: bun, name: 'Bun', slug: 'bun', total: 1 }])
    // C6–C8: pages, clamping, past the last page.
    expect((await api.get(`${TERMS}?per_page=1&page=2`)).body).toEqual({ data: [{ id: bun, name: 'Bun', slug: 'bun', total: 3 }], meta: { current_page: 2, last_page: 2, per_page: 1, total: 2 } })
    expect((await api.get(`${TERMS}?per_page=500&page=9`)).body).toEqual({ data: [], meta: { current_page: 9, last_page: 1, per_page: 100, total: 2 } })
    // C3: a trailing slash is the same path.
    expect((await api.get(`${TERMS}/`)).text).toBe((await api.get(TERMS)).text)
  })

  test('C5, C6, C46: unknown taxonomy and type are 404 (the type first), bad page and per_page are 400, all as JSON with the right headers', async () => {
    await addTerm(db.sql, 'tag', 'Bun')
    const cases: [string, number, string][] = [
      ['/api/v1/taxonomies/nope/terms', 404, 'Taxonomy not found.'],
      ['/api/v1/taxonomies/Tag/terms', 404, 'Taxonomy not found.'],
      ['/api/v1/taxonomies/%E0%A4%A/terms', 404, 'Taxonomy not found.'],
      [`${TERMS}?type=nope`, 404, 'Content type not found.'],
      [`${TERMS}?type=Post`, 404, 'Content type not found.'],
      ['/api/v1/taxonomies/nope/terms?type=nope', 404, 'Content type not found.'],
      [`${TERMS}?page=0`, 400, 'The page parameter must be a positive integer.'],
      [`${TERMS}?page=1.0`, 400, 'The page parameter must be a positive integer.'],
      [`${TERMS}?per_page=-1`, 400, 'The per_page parameter must be a positive integer.'],
      [`${TERMS}?per_page=0x10`, 400, 'The per_page parameter must be a positive integer.'],
    ]
    for (const [path, status, error] of cases) {
      const response = await api.get(path)
      expect([path, response.status, response.body, response.headers.get('content-type')]).toEqual([path, status, { error }, 'application/json; charset=utf-8'])
      // A name that is not valid percent-encoding is refused before any statement, as the content routes refuse such a type.
      if (status === 404 && !path.includes('%E0')) expect([path, response.headers.get('etag'), response.headers.get('surrogate-key')]).toEqual([path, expect.any(String), expect.any(String)])
      if (status === 400) expect(response.headers.get('cache-control')).toBe('public, max-age=0')
    }
    expect((await api.get('/api/v1/taxonomies/tag')).status).toBe(404)
  })

  test('C3: 405 with Allow for other methods; HEAD is GET without a body; OPTIONS is a CORS preflight', async () => {
    for (const path of ROUTES) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const refused = await api.get(path, { method })
        expect([path, method, refused.status, refused.headers.get('allow'), refused.body]).toEqual([path, method, 405, 'GET, HEAD, OPTIONS', { error: 'Method not allowed.' }])
      }
      const get = await api.get(path)
      const head = await api.get(path, { method: 'HEAD' })
      expect([path, head.status, head.text, head.headers.get('etag'), head.headers.get('content-length')]).toEqual([path, get.status, '', get.headers.get('etag'), String(new TextEncoder().encode(get.text).length)])
      const preflight = await api.get(path, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' } })
      expect([path, preflight.status, preflight.headers.get('access-control-allow-methods')]).toEqual([path, 204, 'GET, HEAD, OPTIONS'])
    }
  })

  test('C29: CORS for any origin, or only the listed ones', async () => {
    for (const path of ROUTES) {
      expect([path, (await api.get(path, { headers: { origin: 'https://x.example' } })).headers.get('access-control-allow-origin')]).toEqual([path, '*'])
      const allowed = await listed.get(path, { headers: { origin: 'https://app.example' } })
      expect([path, allowed.headers.get('access-control-allow-origin'), allowed.headers.get('vary')]).toEqual([path, 'https://app.example', 'Origin'])
      expect([path, (await listed.get(path, { headers: { origin: 'https://x.example' } })).headers.get('access-control-allow-origin')]).toEqual([path, null])
    }
  })

  test('C32–C34, C51: ETag of the bytes, 304 on If-None-Match (from the cache too), Surrogate-Key, X-Cache, the same bytes as an uncached service', async () => {
    const bun = await addTerm(db.sql, 'tag', 'Bun')
    await addEntry(db.sql, { termIds: [bun] })
    await settled()
    const keys: Record<string, string> = {
      '/api/v1/languages': 'languages vitrine',
      '/api/v1/content-types': 'content-types type-page lists-page type-post lists-post vitrine',
      '/api/v1/taxonomies': 'taxonomies vitrine',
      [TERMS]: 'taxonomy-tag taxonomies type-page lists-page type-post lists-post vitrine',
      [`${TERMS}?type=post`]: 'taxonomy-tag taxonomies type-post lists-post vitrine',
      '/api/v1/taxonomies/nope/terms': 'taxonomy-nope taxonomies vitrine',
      '/api/v1': 'index vitrine',
    }
    for (const [path, key] of Object.entries(keys)) {
      const miss = await cached.get(path)
      const hit = await cached.get(path)
      const plain = await api.get(path)
      expect([path, miss.headers.get('x-cache'), hit.headers.get('x-cache'), plain.headers.get('x-cache')]).toEqual([path, 'MISS', 'HIT', 'BYPASS'])
      expect([path, hit.text, hit.headers.get('etag'), hit.headers.get('surrogate-key')]).toEqual([path, plain.text, plain.headers.get('etag'), key])
      expect(hit.headers.get('cache-control')).toBe('public, no-cache')
      for (const app of [cached, api]) {
        for (const method of ['GET', 'HEAD']) {
          const revalidated = await app.get(path, { method, headers: { 'if-none-match': `W/"x", ${plain.headers.get('etag')}` } })
          expect([path, method, revalidated.status, revalidated.text, revalidated.headers.get('etag')]).toEqual([path, method, 304, '', plain.headers.get('etag')])
        }
      }
    }
  })
})

describe('C36: never stale, whoever writes', () => {
  const cases: [string, string, string, (ids: { entry: number; term: number }) => Promise<unknown>][] = [
    ['a term taken off the entry', 'entry_terms', TERMS, ({ entry }) => db.sql`delete from entry_terms where entry_id = ${entry}`],
    ['a term renamed', 'terms', TERMS, ({ term }) => db.sql`update terms set name = 'Renamed' where id = ${term}`],
    ['an entry made a draft', 'entries', `${TERMS}?type=post`, ({ entry }) => db.sql`update entries set status = 'draft' where id = ${entry}`],
    ['an entry made a draft', 'entries', '/api/v1/content-types', ({ entry }) => db.sql`update entries set status = 'draft' where id = ${entry}`],
    ['an entry moved to another type', 'entries', `${TERMS}?type=post`, ({ entry }) => db.sql`update entries set content_type_id = (select id from content_types where slug = 'page') where id = ${entry}`],
    ['a content type renamed', 'content_types', '/api/v1/content-types', () => db.sql`update content_types set name = 'Article' where slug = 'post'`],
    ['a language added', 'languages', '/api/v1/languages', () => addLanguage(db.sql, 'de', 'Deutsch')],
    ['a taxonomy renamed', 'taxonomies', '/api/v1/taxonomies', () => db.sql`update taxonomies set name = 'Tags' where slug = 'tag'`],
    ['TRUNCATE', 'entries', TERMS, () => db.sql`truncate entries cascade`],
  ]
  for (const [what, table, path, write] of cases) {
    test(`${what} (${table}): ${path}`, async () => {
      const term = await addTerm(db.sql, 'tag', 'Bun')
      const entry = await addEntry(db.sql, { termIds: [term] })
      await settled()
      const before = await cached.get(path)
      expect((await cached.get(path)).headers.get('x-cache')).toBe('HIT')
      const notified = cached.nextChange(table)
      await write({ entry, term })
      await notified
      const after = await cached.get(path)
      expect(after.headers.get('x-cache')).toBe('MISS')
      expect(after.text).not.toBe(before.text)
      expect(after.text).toBe((await api.get(path)).text)
    })
  }
})

describe('C46: the index and the way to the reference', () => {
  test('GET /api/v1: name, version, the URL of every path of the OpenAPI document, of the document and of /docs', async () => {
    const index = (await api.get('/api/v1')).body
    const document = (await api.get('/api/v1/openapi.json')).body
    // One version (issue 31): the document's `info.version` is the API's; package.json follows it, and the index says it too.
    expect([index.version, document.info.version]).toEqual([packageJson.version, packageJson.version])
    expect(index).toMatchObject({ version: packageJson.version, url: 'https://cms.example.com/api/v1', openapi: 'https://cms.example.com/api/v1/openapi.json', docs: 'https://cms.example.com/docs' })
    expect(index.routes.map((route: any) => route.url)).toEqual(Object.keys(document.paths).map((path) => `https://cms.example.com${path}`))
    for (const path of ['/api/v1/languages', '/api/v1/content-types', '/api/v1/taxonomies', '/api/v1/taxonomies/{taxonomy}/terms', '/api/v1/content/{type}', '/api/v1/content/{type}/{slug}', '/healthz', '/readyz', '/docs', '/api/v1/openapi.json', '/api/v1', '/']) {
      expect(index.routes).toContainEqual(expect.objectContaining({ url: `https://cms.example.com${path}`, methods: ['GET', 'HEAD', 'OPTIONS'] }))
    }
    // A database of yours: the demo's images are not served, nor documented.
    expect(Object.keys(document.paths).some((path) => path.startsWith('/media'))).toBe(false)
    expect(documentChecker(document)('get', '/api/v1', await api.get('/api/v1'))).toEqual([])
  })

  test('GET / redirects (302) to /docs; a browser lands on the reference', async () => {
    for (const method of ['GET', 'HEAD']) {
      const response = await api.get('/', { method, redirect: 'manual' })
      expect([method, response.status, response.headers.get('location')]).toEqual([method, 302, '/docs'])
    }
    const followed = await api.app.handle(new Request('http://localhost/'))
    expect(followed.headers.get('content-type')).toBe('application/json; charset=utf-8')
  })
})

describe('the demo images under /media', () => {
  const demoApp = () => {
    // Settings without DATABASE_URL: the service would run its embedded database with the demo content.
    const config = loadConfig({ PUBLIC_URL: 'https://cms.example.com' })
    const sql = openReadPool(db.url, { ...config, databasePoolMax: 1 })
    return { app: createApp({ sql, config, log: createLogger('silent') }), sql, config }
  }

  test('served with the embedded database: every image the demo content names, as image/jpeg; the document lists them', async () => {
    const demo = demoApp()
    try {
      expect(demo.config.demoMedia).toBe(true)
      for (const name of ['photo-12.jpg', 'photo-1-thumbnail.jpg', 'photo-1-medium.jpg', 'photo-4-thumbnail.jpg']) {
        const response = await demo.app.handle(new Request(`http://localhost/media/uploads/2026/${name}`))
        const bytes = new Uint8Array(await response.arrayBuffer())
        expect([name, response.status, response.headers.get('content-type'), bytes[0], bytes[1]]).toEqual([name, 200, 'image/jpeg', 0xff, 0xd8])
        expect(bytes.length).toBeLessThan(8192)
      }
      const document = (await (await demo.app.handle(new Request('http://localhost/api/v1/openapi.json'))).json()) as { paths: object }
      expect(Object.keys(document.paths)).toContain('/media/uploads/{year}/{file}')
    } finally {
      await demo.sql.end()
    }
  })

  test('no path leaves the folder: traversal, encoded or not, and missing files are a JSON 404', async () => {
    const demo = demoApp()
    try {
      for (const path of [
        '/media/uploads/2026/nope.jpg',
        '/media/../package.json',
        '/media/uploads/../../media.ts',
        '/media/uploads/2026/..%2F..%2F..%2Fmedia.ts',
        '/media/%2e%2e/%2e%2e/seed-demo.ts',
        '/media/uploads/2026/photo-12.jpg%00.ts',
        '/media/uploads%2F2026%2Fphoto-12.jpg',
        '/media/',
        '/media/uploads/2026',
      ]) {
        const response = await demo.app.handle(new Request(`http://localhost${path}`))
        expect([path, response.status, await response.json(), response.headers.get('content-type')]).toEqual([path, 404, { error: 'Not found.' }, 'application/json; charset=utf-8'])
      }
    } finally {
      await demo.sql.end()
    }
  })

  test('never with a DATABASE_URL: /media is a 404 like any unknown path', async () => {
    expect(api.config.demoMedia).toBe(false)
    const response = await api.get('/media/uploads/2026/photo-12.jpg')
    expect([response.status, response.body]).toEqual([404, { error: 'Not found.' }])
    // A worker of a supervisor with a database of yours says so too.
    expect(loadConfig({ VITRINE_WORKER: '1', DATABASE_URL: db.url }).demoMedia).toBe(false)
    expect(loadConfig({ VITRINE_WORKER: '1', DATABASE_URL: db.url, VITRINE_DEMO_MEDIA: '1' }).demoMedia).toBe(true)
  })
})
