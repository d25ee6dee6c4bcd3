import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'
import { clientKeyOf, parseAddress, parseAddressRange } from '../src/quotas/addresses'
import { clientKey, UNKNOWN_CLIENT } from '../src/quotas/client'
import { MAX_CLIENTS, TokenBuckets } from '../src/quotas/token-buckets'
import { tooManyRequests } from '../src/quotas/client-quotas'
import { ContentCache, type Loaded } from '../src/cache/content-cache'
import { cachedTestApp, type CachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addContentType, addEntry, clearContent } from './support/fixtures'
import { EventFeed } from '../src/changes/event-feed'
import { decodeEventMark } from '../src/changes/event-mark'
import { heavyAdmissions } from '../src/db/lanes'
import { createLogger } from '../src/log'
import { startService, type RunningService } from './support/service'
import { waitFor } from './support/wait'
import { Validator } from '@seriousme/openapi-schema-validator'
import { fetchOpenApiText } from './support/openapi'
import { documentChecker } from './support/openapi-validation'

const ranges = (...texts: string[]) => texts.map((text) => parseAddressRange(text)!)

describe('C52: who the client is', () => {
  test('C52: without TRUSTED_PROXIES the peer is the client, whatever X-Forwarded-For says', () => {
    expect(clientKey('192.0.2.7', '203.0.113.1', [])).toBe('192.0.2.7')
    expect(clientKey('192.0.2.7', null, [])).toBe('192.0.2.7')
    expect(clientKey(null, '203.0.113.1', ranges('0.0.0.0/0'))).toBe(UNKNOWN_CLIENT)
    // A peer that is not a trusted proxy: its header is not believed either.
    expect(clientKey('192.0.2.7', '203.0.113.1', ranges('10.0.0.0/8'))).toBe('192.0.2.7')
  })

  test('C52: behind trusted proxies, the right-most address that is not one; a forged left-most address is never believed', () => {
    const trusted = ranges('10.0.0.0/8', '2001:db8:ffff::/48')
    expect(clientKey('10.0.0.2', '203.0.113.9', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '198.51.100.7, 203.0.113.9', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '198.51.100.7, 203.0.113.9, 10.1.1.1, 10.2.2.2', trusted)).toBe('203.0.113.9')
    expect(clientKey('::ffff:10.0.0.2', '198.51.100.7,203.0.113.9 ,2001:db8:ffff::1', trusted)).toBe('203.0.113.9')
    // Every hop trusted: the left-most.
    expect(clientKey('10.0.0.2', '10.9.9.9, 10.1.1.1', trusted)).toBe('10.9.9.9')
    // No header: the proxy itself. Something that is no address: the proxy that wrote it.
    expect(clientKey('10.0.0.2', null, trusted)).toBe('10.0.0.2')
    expect(clientKey('10.0.0.2', '203.0.113.9, unknown', trusted)).toBe('10.0.0.2')
    expect(clientKey('10.0.0.2', '203.0.113.9, unknown, 10.1.1.1', trusted)).toBe('10.1.1.1')
    // Ports, as some proxies write them.
    expect(clientKey('10.0.0.2', '203.0.113.9:5123', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '[2001:db8:1:2::7]:443', trusted)).toBe('2001:db8:1:2::/64')
  })

  test('C52: IPv6 counts per /64, IPv4-mapped IPv6 as IPv4', () => {
    expect(clientKeyOf(parseAddress('2001:db8:1:2:aaaa:bbbb:cccc:dddd')!)).toBe('2001:db8:1:2::/64')
    expect(clientKeyOf(parseAddress('2001:db8:1:2::1')!)).toBe('2001:db8:1:2::/64')
    expect(clientKeyOf(parseAddress('2001:0db8:0001:0003::1')!)).toBe('2001:db8:1:3::/64')
    expect(clientKeyOf(parseAddress('::1')!)).toBe('0:0:0:0::/64')
    expect(clientKeyOf(parseAddress('fe80::1%eth0')!)).toBe('fe80:0:0:0::/64')
    expect(clientKeyOf(parseAddress('::ffff:192.0.2.1')!)).toBe('192.0.2.1')
    expect(clientKeyOf(parseAddress('::ffff:c000:201')!)).toBe('192.0.2.1')
    expect(parseAddress('unknown')).toBeNull()
    expect(parseAddress('')).toBeNull()
    expect(parseAddress('999.1.1.1')).toBeNull()
  })

  test('C52: TRUSTED_PROXIES takes addresses and CIDR ranges, IPv4 and IPv6; anything else stops the start naming it', () => {
    const { trustedProxies } = loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,::1' })
    expect(trustedProxies).toHaveLength(4)
    expect(clientKey('192.0.2.7', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('::ffff:192.0.2.7', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('192.0.2.8', '203.0.113.9', trustedProxies)).toBe('192.0.2.8')
    expect(clientKey('2001:db8:5::1', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('2001:db9::1', '203.0.113.9', trustedProxies)).toBe('2001:db9:0:0::/64')
    expect(loadConfig({}).trustedProxies).toEqual([])
    for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/8/1', '::1/129', '10.0.0.0/']) {
      expect(() => loadConfig({ TRUSTED_PROXIES: `192.0.2.1, ${bad}` })).toThrow(
        new ConfigError(`TRUSTED_PROXIES must be a comma-separated list of IP addresses and CIDR ranges (10.0.0.0/8, 2001:db8::/32), not "${bad}".`),
      )
    }
  })

  test('C52: the quotas are off by default; the window is 60 s', () => {
    expect(loadConfig({})).toMatchObject({ rateLimitRequests: 0, rateLimitHeavy: 0, rateLimitWindowS: 60 })
    expect(loadConfig({ RATE_LIMIT_REQUESTS: '50', RATE_LIMIT_HEAVY: '5', RATE_LIMIT_WINDOW_S: '10' })).toMatchObject({ rateLimitRequests: 50, rateLimitHeavy: 5, rateLimitWindowS: 10 })
    expect(() => loadConfig({ RATE_LIMIT_WINDOW_S: '0' })).toThrow(new ConfigError('RATE_LIMIT_WINDOW_S must be a whole number from 1 to 86400, not "0".'))
    expect(() => loadConfig({ RATE_LIMIT_REQUESTS: '-1' })).toThrow(ConfigError)
  })
})

describe('C52: the token buckets', () => {
  test('C52: q units, refilled at q/w a second; r and t after each request; Retry-After until a unit is back', () => {
    const store = new TokenBuckets({ requests: 5, heavy: 2 }, 10)
    const buckets = store.of('a', 0)
    expect(store.state(buckets, 'requests', 0)).toEqual({ remaining: 5, fullInSeconds: 0 })
    for (let i = 0; i < 5; i++) expect(store.take(buckets, 'requests', 0)).toBe(true)
    expect(store.state(buckets, 'requests', 0)).toEqual({ remaining: 0, fullInSeconds: 10 })
    expect(store.take(buckets, 'requests', 0)).toBe(false)
    expect(store.secondsUntilUnit(buckets, 'requests', 0)).toBe(2)
    expect(store.take(buckets, 'requests', 1999)).toBe(false)
    expect(store.secondsUntilUnit(buckets, 'requests', 1999)).toBe(1)
    expect(store.take(buckets, 'requests', 2000)).toBe(true)
    expect(store.state(buckets, 'requests', 2000)).toEqual({ remaining: 0, fullInSeconds: 10 })
    expect(store.state(buckets, 'requests', 6000)).toEqual({ remaining: 2, fullInSeconds: 6 })
    expect(store.state(buckets, 'requests', 60_000)).toEqual({ remaining: 5, fullInSeconds: 0 })
    // The other quota is its own bucket.
    expect(store.state(buckets, 'heavy', 2000)).toEqual({ remaining: 2, fullInSeconds: 0 })
    store.giveBack(buckets, 'requests')
    expect(store.state(buckets, 'requests', 2000)).toEqual({ remaining: 1, fullInSeconds: 8 })
  })

  test('C52: memory stays bounded under 100 000 distinct addresses; an active client keeps its bucket, idle full ones are forgotten', () => {
    const store = new TokenBuckets({ requests: 10, heavy: 0 }, 60, 10_000)
    const active = store.of('203.0.113.1', 0)
    for (let i = 0; i < 10; i++) store.take(active, 'requests', 0)
    for (let i = 0; i < 100_000; i++) {
      store.take(store.of(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i / 1000), 'requests', i / 1000)
      if (i % 1000 === 0) {
        store.take(store.of('203.0.113.1', i / 1000), 'requests', i / 1000)
        expect(store.size).toBeLessThanOrEqual(10_000)
      }
    }
    expect(store.size).toBe(10_000)
    // The active client was never forgotten: its bucket is still spent.
    expect(store.take(store.of('203.0.113.1', 100), 'requests', 100)).toBe(false)
    // A window later every bucket is full: clients passing by sweep the idle ones away.
    for (let i = 0; i < 6000; i++) store.of(`192.0.2.${i % 200}`, 200_000)
    expect(store.size).toBeLessThan(300)

    // The default bound, with addresses that each came once.
    const defaults = new TokenBuckets({ requests: 10, heavy: 10 }, 60)
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 3 * MAX_CLIENTS; i++) {
      const buckets = defaults.of(`2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`, 0)
      defaults.take(buckets, 'requests', 0)
    }
    expect(defaults.size).toBe(MAX_CLIENTS)
    Bun.gc(true)
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(40 * 1024 * 1024)
  }, 120_000)
})

describe('C52: quotas over real HTTP', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  /** Listens on every address, IPv4 and IPv6; believes X-Forwarded-For from loopback. */
  let proxied: RunningService
  /** Believes no proxy. */
  let direct: RunningService

  beforeAll(async () => {
    db = await createTestDatabase()
    await clearContent(db.sql)
    for (const word of ['alpha', 'beta', 'gamma', 'delta']) await addEntry(db.sql, { translations: { en: { title: `About ${word}`, slug: word } } })
    ;[proxied, direct] = await Promise.all([
      startService({ DATABASE_URL: db.url, PORT: '0', HOST: '::', RATE_LIMIT_REQUESTS: '6', RATE_LIMIT_HEAVY: '2', RATE_LIMIT_WINDOW_S: '600', TRUSTED_PROXIES: '127.0.0.0/8, ::1' }),
      startService({ DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', RATE_LIMIT_REQUESTS: '2', RATE_LIMIT_WINDOW_S: '2' }),
    ])
    // The cache answers once its listener hears the database (a client of its own warms it).
    await waitFor('the cache to answer', async () => (await get(proxied, '/api/v1/content/post', '192.0.2.250')).headers.get('x-cache') !== 'BYPASS')
  })
  afterAll(async () => {
    await Promise.all([proxied?.stop(), direct?.stop()])
    await db?.sql.end()
  })

  const portOf = (service: RunningService) => new URL(service.url).port
  async function get(service: RunningService, path: string, forwardedFor?: string, init: { host?: string; headers?: Record<string, string>; method?: string } = {}) {
    const headers: Record<string, string> = { ...init.headers }
    if (forwardedFor !== undefined) headers['x-forwarded-for'] = forwardedFor
    const response = await fetch(`http://${init.host ?? '127.0.0.1'}:${portOf(service)}${path}`, { headers, method: init.method })
    const text = await response.text()
    return { status: response.status, headers: response.headers, text }
  }
  const left = (response: { headers: Headers }) => response.headers.get('ratelimit')

  test('C52: every answer carries the policy and what is left; past the quota, a 429 that costs nothing, is never cached, and says when to come back; another client is unaffected', async () => {
    const client = '203.0.113.1'
    const first = await get(proxied, '/api/v1/content/post', client, { headers: { origin: 'https://app.example', 'x-request-id': 'quota-1' } })
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit-policy')).toBe('"requests";q=6;w=600, "heavy";q=2;w=600')
    expect(left(first)).toBe('"requests";r=5;t=100, "heavy";r=2;t=0')
    expect(first.headers.get('access-control-expose-headers')).toContain('RateLimit-Policy, RateLimit')
    for (let r = 4; r >= 0; r--) expect(left(await get(proxied, `/api/v1/content/post?page=${r + 1}`, client))).toBe(`"requests";r=${r};t=${(6 - r) * 100}`.concat(', "heavy";r=2;t=0'))
    const refused = await get(proxied, '/api/v1/content/post', client, { headers: { origin: 'https://app.example', 'x-request-id': 'quota-2' } })
    expect(refused.status).toBe(429)
    expect(JSON.parse(refused.text)).toEqual({ error: 'Too many requests.' })
    expect(refused.headers.get('retry-after')).toBe('100')
    expect(refused.headers.get('cache-control')).toBe('no-store')
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(refused.headers.get('x-request-id')).toBe('quota-2')
    expect(refused.headers.get('access-control-allow-origin')).toBe('*')
    expect(refused.headers.get('ratelimit-policy')).toBe('"requests";q=6;w=600, "heavy";q=2;w=600')
    expect(left(refused)).toBe('"requests";r=0;t=600, "heavy";r=2;t=0')
    // The 429 cost no unit: the next says the same.
    expect(left(await get(proxied, '/api/v1/content/post', client))).toBe('"requests";r=0;t=600, "heavy";r=2;t=0')
    const other = await get(proxied, '/api/v1/content/post', '203.0.113.2')
    expect(other.status).toBe(200)
    expect(left(other)).toBe('"requests";r=5;t=100, "heavy";r=2;t=0')
  })

  test('C52: a 304 carries the fields; the ETag and the kept answer are the same for every client', async () => {
    const first = await get(proxied, '/api/v1/content/post/alpha', '203.0.113.20')
    const second = await get(proxied, '/api/v1/content/post/alpha', '203.0.113.21', { headers: { 'if-none-match': first.headers.get('etag')! } })
    expect(second.status).toBe(304)
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'))
    expect(left(second)).toBe('"requests";r=5;t=100, "heavy";r=2;t=0')
    const again = await get(proxied, '/api/v1/content/post/alpha', '203.0.113.20')
    expect(again.text).toBe(first.text)
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'))
    expect(left(again)).toBe('"requests";r=4;t=200, "heavy";r=2;t=0')
  })

  test('C52: behind a trusted proxy, a forged left-most X-Forwarded-For is never believed; the right-most untrusted address is the client', async () => {
    const client = '198.51.100.9'
    for (let i = 0; i < 6; i++) expect((await get(proxied, '/api/v1/content/post', client)).status).toBe(200)
    expect((await get(proxied, '/api/v1/content/post', client)).status).toBe(429)
    // Whatever the client writes to the left, our proxy appended its real address.
    expect((await get(proxied, '/api/v1/content/post', `192.0.2.123, ${client}`)).status).toBe(429)
    expect((await get(proxied, '/api/v1/content/post', `192.0.2.124, ${client}, 127.0.0.9`)).status).toBe(429)
    // Over IPv6 to the same service, from a trusted ::1.
    expect((await get(proxied, '/api/v1/content/post', `192.0.2.125, ${client}`, { host: '[::1]' })).status).toBe(429)
    const someoneElse = await get(proxied, '/api/v1/content/post', `${client}, 192.0.2.77`)
    expect(someoneElse.status).toBe(200)
    expect(left(someoneElse)).toStartWith('"requests";r=5;')
  })

  test('C52: IPv6 clients count per /64', async () => {
    for (let i = 0; i < 6; i++) expect((await get(proxied, '/api/v1/content/post', `2001:db8:aa:1::${i + 1}`, { host: '[::1]' })).status).toBe(200)
    expect((await get(proxied, '/api/v1/content/post', '2001:db8:aa:1:ffff:eeee:dddd:cccc')).status).toBe(429)
    expect((await get(proxied, '/api/v1/content/post', '[2001:db8:aa:1::99]:4431')).status).toBe(429)
    expect((await get(proxied, '/api/v1/content/post', '2001:db8:aa:2::1')).status).toBe(200)
  })

  test('C52: a heavy unit only for a heavy statement that runs: never for an answer from the cache; past the heavy quota, a 429 that costs no request unit', async () => {
    const client = '192.0.2.50'
    const search = (word: string) => get(proxied, `/api/v1/content/post?search=${word}`, client)
    const miss = await search('alpha')
    expect([miss.status, miss.headers.get('x-cache'), left(miss)]).toEqual([200, 'MISS', '"requests";r=5;t=100, "heavy";r=1;t=300'])
    const hit = await search('alpha')
    expect([hit.status, hit.headers.get('x-cache'), left(hit)]).toEqual([200, 'HIT', '"requests";r=4;t=200, "heavy";r=1;t=300'])
    const second = await search('beta')
    expect([second.status, second.headers.get('x-cache'), left(second)]).toEqual([200, 'MISS', '"requests";r=3;t=300, "heavy";r=0;t=600'])
    const refused = await search('gamma')
    expect([refused.status, refused.headers.get('cache-control'), refused.headers.get('retry-after'), left(refused)]).toEqual([429, 'no-store', '300', '"requests";r=3;t=300, "heavy";r=0;t=600'])
    expect(JSON.parse(refused.text)).toEqual({ error: 'Too many requests.' })
    // What the cache keeps is still served; cheap statements still run.
    const kept = await search('beta')
    expect([kept.status, kept.headers.get('x-cache'), left(kept)]).toEqual([200, 'HIT', '"requests";r=2;t=400, "heavy";r=0;t=600'])
    expect((await get(proxied, '/api/v1/content/post/gamma', client)).status).toBe(200)
    // Another client searches on.
    expect((await get(proxied, '/api/v1/content/post?search=gamma', '192.0.2.51')).status).toBe(200)
  })

  test('C52: without TRUSTED_PROXIES the header is ignored; units come back after Retry-After; /healthz and /readyz are never limited', async () => {
    let refused: Awaited<ReturnType<typeof get>> | undefined
    for (let i = 0; i < 10 && !refused; i++) {
      const response = await get(direct, '/api/v1/content/post', `203.0.113.${100 + i}`)
      if (response.status === 429) refused = response
    }
    expect(refused).toBeDefined()
    expect(refused!.headers.get('retry-after')).toBe('1')
    expect(left(refused!)).toBe('"requests";r=0;t=2')
    for (let i = 0; i < 5; i++) {
      const probe = await get(direct, i % 2 ? '/readyz' : '/healthz')
      expect(probe.status).toBe(200)
      expect(probe.headers.get('ratelimit')).toBeNull()
    }
    await Bun.sleep(1000)
    const back = await get(direct, '/api/v1/content/post', '203.0.113.200')
    expect(back.status).toBe(200)
    expect(left(back)).toBe('"requests";r=0;t=2')
  })
})

describe('C52: in process', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  let api: CachedTestApp

  beforeAll(async () => {
    db = await createTestDatabase()
    await clearContent(db.sql)
    await addEntry(db.sql, { translations: { en: { title: 'About zeppelins', slug: 'zeppelin' } } })
    api = await cachedTestApp(db.url, { RATE_LIMIT_REQUESTS: '3', RATE_LIMIT_HEAVY: '1', RATE_LIMIT_WINDOW_S: '600', CACHE_MAX_AGE: '30' })
  })
  afterAll(async () => {
    await api?.close()
    await db?.sql.end()
  })

  test('C52: a 429 runs no statement, for either quota; a shared cache may keep the answer but never reuse its fields without asking', async () => {
    const first = await api.get('/api/v1/content/post?search=zeppelin')
    expect(first.status).toBe(200)
    expect(first.headers.get('cache-control')).toBe('public, max-age=30, no-cache="RateLimit, RateLimit-Policy"')
    api.statements.length = 0
    const heavy = await api.get('/api/v1/content/post?search=balloon')
    expect([heavy.status, heavy.headers.get('cache-control'), heavy.headers.get('ratelimit')]).toEqual([429, 'no-store', '"requests";r=2;t=200, "heavy";r=0;t=600'])
    expect(api.statements).toEqual([])
    await api.get('/api/v1/content/post')
    await api.get('/api/v1/content/post')
    api.statements.length = 0
    const refused = await api.get('/api/v1/content/post/zeppelin')
    expect(refused.status).toBe(429)
    expect(api.statements).toEqual([])
  })

  test('C52: the answer of the routes (MISS) and the kept one (HIT, 304) carry each field once, the same way', async () => {
    const fields = (response: { headers: Headers }) => ['x-cache', 'access-control-expose-headers', 'cache-control', 'ratelimit-policy'].map((name) => response.headers.get(name))
    const exposed = 'X-Request-Id, Retry-After, Allow, ETag, X-Cache, Age, Surrogate-Key, RateLimit-Policy, RateLimit'
    const control = 'public, max-age=30, no-cache="RateLimit, RateLimit-Policy"'
    const policy = '"requests";q=100;w=600, "heavy";q=1;w=600'
    // An app of its own: the test before spent the (in-process, unknown) client's units.
    const own = await cachedTestApp(db.url, { RATE_LIMIT_REQUESTS: '100', RATE_LIMIT_HEAVY: '1', RATE_LIMIT_WINDOW_S: '600', CACHE_MAX_AGE: '30' })
    try {
      for (const path of ['/api/v1/languages', '/api/v1/content/post/zeppelin']) {
        const routes = await own.get(path)
        const kept = await own.get(path)
        const notModified = await own.get(path, { headers: { 'if-none-match': kept.headers.get('etag')! } })
        expect([routes, kept, notModified].map((response) => response.status)).toEqual([200, 200, 304])
        expect(fields(routes)).toEqual(['MISS', exposed, control, policy])
        expect(fields(kept)).toEqual(['HIT', exposed, control, policy])
        expect(fields(notModified)).toEqual(['HIT', exposed, control, policy])
      }
    } finally {
      await own.close()
    }
  })
})

describe('C52: the OpenAPI document', () => {
  test('C52: with a quota on, every operation but the probes documents the 429 and the fields on each answer; with none, nothing of it', async () => {
    const off = JSON.parse(await fetchOpenApiText())
    expect(JSON.stringify(off)).not.toContain('RateLimit')
    const on = JSON.parse(await fetchOpenApiText(undefined, { RATE_LIMIT_REQUESTS: '2', RATE_LIMIT_HEAVY: '1' }))
    const result = await new Validator().validate(on)
    expect(result.errors).toBeUndefined()
    const list = on.paths['/api/v1/content/{type}'].get
    expect(list.responses['429']).toEqual({ $ref: '#/components/responses/TooManyRequests' })
    expect(Object.keys(list.responses['200'].headers)).toContain('RateLimit')
    expect(Object.keys(on.components.responses.NotModified.headers)).toEqual(expect.arrayContaining(['RateLimit-Policy', 'RateLimit']))
    expect(on.paths['/healthz'].get.responses['429']).toBeUndefined()
    // A real 429 matches what the document says.
    const db = await createTestDatabase()
    const api = await cachedTestApp(db.url, { RATE_LIMIT_REQUESTS: '1', RATE_LIMIT_WINDOW_S: '600' })
    try {
      const check = documentChecker(on)
      const answered = await api.get('/api/v1/content/nothing')
      expect(answered.status).toBe(404)
      expect(check('get', '/api/v1/content/{type}', answered)).toEqual([])
      const refused = await api.get('/api/v1/content/nothing')
      expect(refused.status).toBe(429)
      expect(check('get', '/api/v1/content/{type}', refused)).toEqual([])
    } finally {
      await api.close()
      await db.sql.end()
    }
  })
})

describe('C52 with C37: one statement for concurrent misses', () => {
  test("a client joining another's statement is not refused by that client's heavy quota: it loads its own", async () => {
    const cache = new ContentCache<string, string>(1024 * 1024)
    cache.onListening({ codes: new Set(['en']), defaultCode: 'en' })
    const loaded = (value: string): Loaded<string> => ({ value, bytes: 10, typeId: 1, expiresInMs: Infinity, language: 'en' })
    let refuse!: (error: Error) => void
    const first = cache.read('/api/v1/content/post?search=x', 'en', () => new Promise<Loaded<string>>((_, reject) => (refuse = reject)))
    const joined = cache.read('/api/v1/content/post?search=x', 'en', async () => loaded('the joiner’s own'))
    refuse(tooManyRequests(3))
    await expect(first).rejects.toMatchObject({ status: 429 })
    expect((await joined).value).toBe('the joiner’s own')
    // Any other failure is everyone's: the joiner gets it too, and runs nothing more.
    let fail!: (error: Error) => void
    let secondLoads = 0
    const failing = cache.read('/api/v1/content/post?search=y', 'en', () => new Promise<Loaded<string>>((_, reject) => (fail = reject)))
    const joinedFailing = cache.read('/api/v1/content/post?search=y', 'en', async () => (secondLoads++, loaded('never')))
    fail(new Error('database down'))
    const [failed, joinedFailed] = await Promise.allSettled([failing, joinedFailing])
    expect([failed.status, joinedFailed.status]).toEqual(['rejected', 'rejected'])
    expect((joinedFailed as PromiseRejectedResult).reason.message).toBe('database down')
    expect(secondLoads).toBe(0)
  })
})

describe('C52 with C49: one catch-up read for every client resuming from one mark', () => {
  test("a client joining another's catch-up read is not refused by that client's heavy quota: it reads for itself", async () => {
    const db = await createTestDatabase()
    const feed = new EventFeed({ sql: db.sql, log: createLogger('silent'), timeoutMs: 5000, maxSubscribers: 10, retentionDays: 30 })
    try {
      await clearContent(db.sql)
      await addContentType(db.sql, 'post')
      // A first stream gives a mark (its id line); a write follows it.
      const first = (await feed.subscribe({ types: null, since: null })).getReader()
      const mark = decodeEventMark(/^id: (\S+)/.exec(new TextDecoder().decode((await first.read()).value))![1]!)
      const id = await addEntry(db.sql, { translations: { en: { title: 'After the mark', slug: 'after' } } })
      // Two clients resume from that mark at once: the first one's heavy quota is spent, the second's is not.
      const refusing = {
        admit(): void {
          throw tooManyRequests(3)
        },
      }
      const admitting = { admitted: 0, admit() { this.admitted++ } }
      const refused = heavyAdmissions.run(refusing, () => feed.subscribe({ types: null, since: mark }))
      const joined = heavyAdmissions.run(admitting, () => feed.subscribe({ types: null, since: mark }))
      await expect(refused).rejects.toMatchObject({ status: 429 })
      const stream = (await joined).getReader()
      expect(new TextDecoder().decode((await stream.read()).value)).toContain(`"ids":[${id}]`)
      // It read for itself, once, under its own admission.
      expect(admitting.admitted).toBe(1)
      await first.cancel()
      await stream.cancel()
    } finally {
      feed.close()
      await db.sql.end()
    }
  })
})
