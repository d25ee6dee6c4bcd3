import { afterAll, describe, expect, test } from 'bun:test'
import { plainContentRequest } from '../src/content/routes'
import { FilterRegistry } from '../src/hooks/registry'
import { testApp, type TestApp, type TestResponse } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage, addTerm } from './support/fixtures'

/**
 * Issue 45: a plain GET of a content route (nothing to decode, each query
 * parameter once) is answered without the framework, by the same handler.
 * Whatever it answers must be what the framework answers for the same request:
 * each case is asked twice, as it is (answered outside the framework) and with
 * one character of its path percent-encoded (which only the framework reads),
 * and the two responses compared: status, every header but Date, body.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr')
const news = await addTerm(db.sql, 'category', 'News')
await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' }, fr: { slug: 'bonjour', title: 'Bonjour' } }, termIds: [news] })
await addEntry(db.sql, { translations: { en: { slug: 'second', title: 'Second' } } })
const apps: TestApp[] = []
afterAll(async () => {
  for (const app of apps) await app.close()
  await db.sql.end()
})
function open(...args: Parameters<typeof testApp>): TestApp {
  const app = testApp(...args)
  apps.push(app)
  return app
}

/** The same request, for the framework alone: the `p` of `/api/v1/content/post` percent-encoded (the framework decodes it back). */
function throughFramework(path: string): string {
  return path.replace('/api/v1/content/post', '/api/v1/content/%70ost').replace('/api/v1/content/nope', '/api/v1/content/%6Eope')
}

/** What a client or cache can see of a response, but its date. */
function seen(response: TestResponse) {
  return { status: response.status, headers: [...response.headers].filter(([name]) => name !== 'date').sort(), body: response.text }
}

const CASES = [
  '/api/v1/content/post',
  '/api/v1/content/post?page=2&per_page=1',
  '/api/v1/content/post?lang=fr&fields=id,title',
  '/api/v1/content/post?include=alternates&term=category:news',
  '/api/v1/content/post?unknown=1',
  '/api/v1/content/post?search=a=b&lang=',
  '/api/v1/content/post?__proto__=x&constructor=y',
  '/api/v1/content/post/hello?fields=',
  '/api/v1/content/post/hello',
  '/api/v1/content/post/bonjour?lang=fr',
  '/api/v1/content/post/hello?lang=xx&include=alternates',
  '/api/v1/content/post/missing',
  '/api/v1/content/nope',
  '/api/v1/content/nope/hello',
  // C6, C7, C39, C40, C44, C45: the client's mistakes, each a 400.
  '/api/v1/content/post?page=0',
  '/api/v1/content/post?per_page=abc',
  '/api/v1/content/post?after=garbage',
  '/api/v1/content/post?page=2&after=abc',
  '/api/v1/content/post?term=news',
  '/api/v1/content/post?fields=nope',
  '/api/v1/content/post/hello?include=bogus',
]

describe('Issue 45: a content route\'s plain GET answered outside the framework', () => {
  test('which requests are plain: nothing to decode, each parameter once with "=", no empty segment', () => {
    expect(plainContentRequest('http://localhost/api/v1/content/post/hello?lang=fr&fields=id')).toEqual({ type: 'post', slug: 'hello', query: { lang: 'fr', fields: 'id' } })
    expect(plainContentRequest('http://x/api/v1/content/post')).toEqual({ type: 'post', query: {} })
    for (const url of [
      'http://localhost/api/v1/content/%70ost',
      'http://localhost/api/v1/content/post/a+b',
      'http://localhost/api/v1/content/post?lang=f%72',
      'http://localhost/api/v1/content/post?search=a+b',
      'http://localhost/api/v1/content/post?lang=fr&lang=en',
      'http://localhost/api/v1/content/post?lang',
      'http://localhost/api/v1/content/post?',
      'http://localhost/api/v1/content/post?=fr',
      'http://localhost/api/v1/content/post/',
      'http://localhost/api/v1/content/post//x',
      'http://localhost/api/v1/content/post/hello/more',
      'http://localhost/api/v1/content/',
      'http://localhost/api/v1/content',
      'http://localhost/api/v1/taxonomies',
      'http://localhost/docs/api/v1/content/post',
      // The framework's router reads the path from the first '/' past `http://`: here `//localhost/…`, a 404.
      'https://localhost/api/v1/content/post',
    ]) expect([url, plainContentRequest(url)]).toEqual([url, null])
    // Every case below is plain as asked, and not once percent-encoded: the comparisons are of both ways.
    for (const path of CASES) expect([path, plainContentRequest(`http://localhost${path}`) !== null, plainContentRequest(`http://localhost${throughFramework(path)}`)]).toEqual([path, true, null])
  })

  test('C4, C29, C32-C34: each answer is the framework\'s, status, headers and body', async () => {
    const app = open(db.url)
    for (const path of CASES) {
      const headers = { 'X-Request-Id': 'same-id' }
      const [plain, framework] = [await app.get(path, { headers }), await app.get(throughFramework(path), { headers })]
      expect([path, seen(plain)]).toEqual([path, seen(framework)])
    }
  })

  test('C35, C52: with the cache and quotas on, the same answers (but for the cache\'s status and the units left)', async () => {
    const app = await cachedTestApp(db.url, { RATE_LIMIT_REQUESTS: '1000', RATE_LIMIT_HEAVY: '100', RATE_LIMIT_WINDOW_S: '600', CACHE_MAX_AGE: '30' })
    apps.push(app)
    const comparable = (response: TestResponse) => {
      const { headers, ...rest } = seen(response)
      // The second asking is a hit of the first's answer (C35): its Age is the one header the first has not.
      return { ...rest, headers: headers.filter(([name]) => name !== 'age').map(([name, value]) => (['x-cache', 'ratelimit'].includes(name) ? [name] : [name, value])) }
    }
    for (const path of ['/api/v1/content/post/hello', '/api/v1/content/post?page=2&per_page=1', '/api/v1/content/post?page=0', '/api/v1/content/nope']) {
      const headers = { 'X-Request-Id': 'same-id' }
      const plain = await app.get(path, { headers })
      expect([path, plain.headers.get('ratelimit-policy') !== null]).toEqual([path, true])
      expect([path, comparable(plain)]).toEqual([path, comparable(await app.get(throughFramework(path), { headers }))])
    }
  })

  test('C29: with CORS_ORIGINS, a listed and an unlisted origin get the framework\'s headers', async () => {
    const app = open(db.url, { CORS_ORIGINS: 'https://app.example' })
    for (const origin of ['https://app.example', 'https://other.example']) {
      for (const path of ['/api/v1/content/post/hello', '/api/v1/content/post?page=0', '/api/v1/content/nope']) {
        const headers = { 'X-Request-Id': 'same-id', Origin: origin }
        expect([path, origin, seen(await app.get(path, { headers }))]).toEqual([path, origin, seen(await app.get(throughFramework(path), { headers }))])
      }
    }
  })

  test('C22, C23: a database that refuses and a callback that throws get the framework\'s 503 and 500, and their log lines', async () => {
    const refused = open('postgres://postgres@127.0.0.1:1/none', { DATABASE_TIMEOUT_MS: '1000' })
    const throwing = new FilterRegistry()
    throwing.add('service/api/content-item', () => {
      throw new Error('the callback broke')
    })
    const failing = open(db.url, {}, throwing)
    for (const [app, path, status] of [[refused, '/api/v1/content/post/hello', 503], [failing, '/api/v1/content/post/hello', 500], [failing, '/api/v1/content/post', 500]] as const) {
      const headers = { 'X-Request-Id': 'same-id' }
      const plain = await app.get(path, { headers })
      const framework = await app.get(throughFramework(path), { headers })
      expect([path, plain.status]).toEqual([path, status])
      expect([path, seen(plain)]).toEqual([path, seen(framework)])
      await app.loggedRequest(path)
      await app.loggedRequest(throughFramework(path))
    }
    // Each failure was logged with the request's id, by either way; and each request's line.
    for (const app of [refused, failing]) {
      const lines = app.logs.map((line) => JSON.parse(line)).filter((line) => line.requestId === 'same-id')
      const faults = lines.filter((line) => line.level !== 'info' && line.level !== 'debug')
      expect(faults.length).toBe(app === refused ? 2 : 4)
      expect(lines.filter((line) => line.msg === 'request').map((line) => line.status)).toEqual(app === refused ? [503, 503] : [500, 500, 500, 500])
    }
  })

  test('C29: the request line of a plain GET is the framework\'s, but for the path as sent', async () => {
    const app = open(db.url)
    const path = '/api/v1/content/post/bonjour?lang=fr'
    await app.get(path, { headers: { 'X-Request-Id': 'line-1' } })
    await app.get(throughFramework(path), { headers: { 'X-Request-Id': 'line-2' } })
    await app.loggedRequest(path)
    await app.loggedRequest(throughFramework(path))
    const line = (id: string) => {
      const { time, ms, requestId, path, ...rest } = app.logs.map((text) => JSON.parse(text)).find((fields) => fields.requestId === id)
      expect([typeof ms, typeof time, requestId]).toEqual(['number', 'string', id])
      return rest
    }
    expect(line('line-1')).toEqual(line('line-2'))
    expect(line('line-1')).toMatchObject({ msg: 'request', method: 'GET', query: 'lang=fr', status: 200 })
  })
})
