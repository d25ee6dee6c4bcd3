import { afterAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { testApp } from './support/app'
import { addEntry } from './support/fixtures'

const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
const anyOrigin = testApp(db.url)
const listed = testApp(db.url, { CORS_ORIGINS: 'https://app.example, https://admin.example' })
afterAll(async () => {
  await anyOrigin.close()
  await listed.close()
  await db.sql.end()
})

const PATHS = ['/api/v1/content/post', '/api/v1/content/post/hello', '/api/v1/content/nope', '/api/v1/content/post?page=0', '/nope']
/** What a browser sends before a GET that carries a header of its own. */
const preflightFrom = (origin: string, requestHeaders?: string): RequestInit => ({
  method: 'OPTIONS',
  headers: {
    origin,
    'access-control-request-method': 'GET',
    ...(requestHeaders === undefined ? {} : { 'access-control-request-headers': requestHeaders }),
  },
})
/** Every header a browser or cache reads for CORS, missing ones as null. */
const corsHeaders = (headers: Headers) =>
  Object.fromEntries(
    ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-expose-headers', 'access-control-max-age', 'access-control-allow-credentials', 'vary'].map(
      (name) => [name, headers.get(name)],
    ),
  )

describe('C29: CORS for any origin (the default)', () => {
  test('simple GET and HEAD: Allow-Origin *, the exposed headers, no Vary, no request header names echoed', async () => {
    for (const path of PATHS) {
      for (const method of ['GET', 'HEAD']) {
        const response = await anyOrigin.get(path, { method, headers: { origin: 'https://app.example', 'x-member': '1', 'x-custom': 'a' } })
        expect([path, method, corsHeaders(response.headers)]).toEqual([path, method, {
          'access-control-allow-origin': '*',
          'access-control-allow-methods': null,
          'access-control-allow-headers': null,
          'access-control-expose-headers': 'X-Request-Id, Retry-After, Allow, ETag, X-Cache, Age, Surrogate-Key',
          'access-control-max-age': null,
          'access-control-allow-credentials': null,
          vary: null,
        }])
      }
    }
  })

  test('a request without Origin gets the same answer (one copy in a shared cache)', async () => {
    const withOrigin = await anyOrigin.get('/api/v1/content/post', { headers: { origin: 'https://app.example' } })
    const without = await anyOrigin.get('/api/v1/content/post')
    expect(corsHeaders(without.headers)).toEqual(corsHeaders(withOrigin.headers))
  })

  test('preflight asking for headers: 204 that allows exactly those, varying by the asked headers', async () => {
    const response = await anyOrigin.get('/api/v1/content/post', preflightFrom('https://app.example', 'X-Member, x-plan'))
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(corsHeaders(response.headers)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, HEAD, OPTIONS',
      'access-control-allow-headers': 'x-member, x-plan',
      'access-control-expose-headers': null,
      'access-control-max-age': '600',
      'access-control-allow-credentials': null,
      vary: 'Access-Control-Request-Headers',
    })
  })

  test('preflight without Access-Control-Request-Headers, or with a malformed one: no Allow-Headers at all, never "undefined"', async () => {
    for (const asked of [undefined, '', 'x-a,,x-b', 'x-a; x-b', 'bad header']) {
      const response = await anyOrigin.get('/api/v1/content/post/hello', preflightFrom('https://app.example', asked))
      expect([asked, response.status, response.headers.get('access-control-allow-headers')]).toEqual([asked, 204, null])
      expect(response.headers.get('vary')).toBe('Access-Control-Request-Headers')
      expect([...response.headers.values()].join(' ')).not.toContain('undefined')
    }
  })
})

describe('C29: CORS with CORS_ORIGINS a list', () => {
  test('a listed origin is echoed; every answer, allowed or not, carries Vary: Origin', async () => {
    for (const path of PATHS) {
      const allowed = await listed.get(path, { headers: { origin: 'https://admin.example', 'x-member': '1' } })
      expect([path, corsHeaders(allowed.headers)]).toEqual([path, {
        'access-control-allow-origin': 'https://admin.example',
        'access-control-allow-methods': null,
        'access-control-allow-headers': null,
        'access-control-expose-headers': 'X-Request-Id, Retry-After, Allow, ETag, X-Cache, Age, Surrogate-Key',
        'access-control-max-age': null,
        'access-control-allow-credentials': null,
        vary: 'Origin',
      }])
      for (const origin of ['https://evil.example', 'https://app.example.evil.example', 'app.example', 'http://app.example']) {
        const refused = await listed.get(path, { headers: { origin } })
        expect([path, origin, refused.headers.get('access-control-allow-origin'), refused.headers.get('vary')]).toEqual([path, origin, null, 'Origin'])
      }
      const noOrigin = await listed.get(path)
      expect([noOrigin.headers.get('access-control-allow-origin'), noOrigin.headers.get('vary')]).toEqual([null, 'Origin'])
    }
    const refused = await listed.get('/api/v1/content/post', { headers: { origin: 'https://evil.example' } })
    expect(refused.status).toBe(200)
  })

  test('preflight: a listed origin is allowed with the asked headers; another gets no Allow-Origin', async () => {
    const allowed = await listed.get('/api/v1/content/post', preflightFrom('https://app.example', 'x-member'))
    expect(allowed.status).toBe(204)
    expect(corsHeaders(allowed.headers)).toEqual({
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-methods': 'GET, HEAD, OPTIONS',
      'access-control-allow-headers': 'x-member',
      'access-control-expose-headers': null,
      'access-control-max-age': '600',
      'access-control-allow-credentials': null,
      vary: 'Origin, Access-Control-Request-Headers',
    })
    const bare = await listed.get('/api/v1/content/post', preflightFrom('https://app.example'))
    expect([bare.headers.get('access-control-allow-headers'), bare.headers.get('vary')]).toEqual([null, 'Origin, Access-Control-Request-Headers'])
    const refused = await listed.get('/api/v1/content/post', preflightFrom('https://evil.example', 'x-member'))
    expect(refused.headers.get('access-control-allow-origin')).toBeNull()
  })
})
