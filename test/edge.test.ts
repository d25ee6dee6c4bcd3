import { afterAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { addContentType, addEntry, addTerm } from './support/fixtures'
import { startService, type RunningService } from './support/service'
import { startVarnish, VARNISHD, type RunningVarnish } from './support/varnish'
import { waitFor } from './support/wait'

/**
 * C51 through a real Varnish with the shipped VCL (deploy/varnish/vitrine.vcl)
 * and vmod_xkey: the service behind it keeps answers an hour (CACHE_MAX_AGE=3600),
 * writers write with SQL, and every read through Varnish is fresh once the
 * purge is acknowledged. Purges go through a proxy that counts them and can
 * refuse them for a while.
 */
if (!VARNISHD) console.log('edge: skipped, no varnishd (apt-get install varnish varnish-modules).')

const db = VARNISHD ? await createTestDatabase() : undefined
const POST = '/api/v1/content/post'

interface PurgeProxy {
  url: string
  /** Each PURGE, with Varnish's status (503 when the proxy refused it). */
  purges: { keys: string[]; status: number }[]
  refusing: boolean
  varnish?: RunningVarnish
  stop(): void
}

/** Forwards PURGE to Varnish, or answers 503 while `refusing`. */
function startPurgeProxy(): PurgeProxy {
  const proxy: PurgeProxy = {
    url: '',
    purges: [],
    refusing: false,
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const keys = (request.headers.get('xkey') ?? '').split(' ')
      if (request.method !== 'PURGE' || proxy.refusing || !proxy.varnish) {
        proxy.purges.push({ keys, status: 503 })
        return new Response('refused', { status: 503 })
      }
      const response = await fetch(proxy.varnish.url, { method: 'PURGE', headers: { xkey: request.headers.get('xkey') ?? '' } })
      proxy.purges.push({ keys, status: response.status })
      return new Response(await response.text(), { status: response.status })
    },
  })
  proxy.url = `http://127.0.0.1:${server.port}/`
  return proxy
}

let service: RunningService | undefined
let varnish: RunningVarnish | undefined
let proxy: PurgeProxy | undefined
const TIMEOUT_MS = 1000
const env = () => ({ DATABASE_URL: db!.url, PORT: '0', CACHE_MAX_AGE: '3600', PURGE_URLS: proxy!.url, DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) })

if (db) {
  await addContentType(db.sql, 'post')
  proxy = startPurgeProxy()
  service = await startService(env())
  varnish = await startVarnish(Number(new URL(service.url).port))
  proxy.varnish = varnish
  // The service holds the purge duty once it purged everything.
  await waitFor('the first purge of everything', () => proxy!.purges.some((purge) => purge.keys.includes('vitrine') && purge.status === 200), 30_000)
}

afterAll(async () => {
  await service?.stop()
  await varnish?.stop()
  proxy?.stop()
})

async function throughVarnish(path: string): Promise<{ status: number; body: any; hit: boolean; cacheControl: string | null }> {
  const response = await fetch(varnish!.url + path)
  const text = await response.text()
  // X-Varnish holds two ids on a hit: this request's and the one that stored the object.
  const hit = (response.headers.get('x-varnish') ?? '').split(' ').length === 2
  return { status: response.status, body: text ? JSON.parse(text) : null, hit, cacheControl: response.headers.get('cache-control') }
}

/**
 * Once the purges of the writes before (and their second purges, DATABASE_TIMEOUT_MS
 * later) are over, reads twice: the second read must come from Varnish's cache.
 * Fresh after the next write then proves that write's own purge, nothing else.
 */
async function cachedInVarnish(path: string): Promise<void> {
  await Bun.sleep(TIMEOUT_MS + 300)
  await throughVarnish(path)
  const again = await throughVarnish(path)
  expect([path, again.hit, again.cacheControl]).toEqual([path, true, expect.stringMatching(/^public, max-age=\d+$/)])
}

/** Reads through Varnish until `fresh` holds, within `ms` of the write. */
async function freshWithin(path: string, fresh: (answer: Awaited<ReturnType<typeof throughVarnish>>) => boolean, ms = 3000): Promise<void> {
  let last: unknown
  await waitFor(`${path} fresh through Varnish (last: ${JSON.stringify(last)})`, async () => {
    const answer = await throughVarnish(path)
    last = answer.body
    return fresh(answer)
  }, ms)
}

describe.skipIf(!VARNISHD)('C51: fresh through Varnish with CACHE_MAX_AGE=3600', () => {
  test('a title changed with SQL: the entry and its list', async () => {
    const entry = await addEntry(db!.sql, { translations: { en: { slug: 'title', title: 'Before' } } })
    await Promise.all([cachedInVarnish(`${POST}/title`), cachedInVarnish(POST)])
    await db!.sql`update entry_translations set title = 'After' where entry_id = ${entry}`
    await freshWithin(`${POST}/title`, ({ body }) => body.data.title === 'After')
    await freshWithin(POST, ({ body }) => body.data.some((item: { title: string }) => item.title === 'After'))
  }, 30_000)

  test('a term renamed: the entries that carry it, and the terms list', async () => {
    const term = await addTerm(db!.sql, 'tag', 'Old')
    await addEntry(db!.sql, { termIds: [term], translations: { en: { slug: 'termed' } } })
    const terms = '/api/v1/taxonomies/tag/terms'
    await Promise.all([cachedInVarnish(`${POST}/termed`), cachedInVarnish(terms)])
    await db!.sql`update terms set name = 'Renamed' where id = ${term}`
    await freshWithin(`${POST}/termed`, ({ body }) => JSON.stringify(body.data.terms).includes('Renamed'))
    await freshWithin(terms, ({ body }) => body.data[0]?.name === 'Renamed')
  }, 30_000)

  test('a go-live: the list shows the entry at its second', async () => {
    await addContentType(db!.sql, 'event')
    await addEntry(db!.sql, { type: 'event', translations: { en: { slug: 'soon' } }, publishedAt: new Date(Date.now() + 4000) })
    await addEntry(db!.sql, { type: 'event', translations: { en: { slug: 'now' } } })
    await cachedInVarnish('/api/v1/content/event')
    await freshWithin('/api/v1/content/event', ({ body }) => body.data.length === 2, 6000)
  }, 30_000)

  test('a delete: 404 through Varnish', async () => {
    const entry = await addEntry(db!.sql, { translations: { en: { slug: 'doomed' } } })
    await cachedInVarnish(`${POST}/doomed`)
    await db!.sql`delete from entries where id = ${entry}`
    await freshWithin(`${POST}/doomed`, ({ status }) => status === 404)
  }, 30_000)

  test('a purge endpoint answering 503 for a while loses nothing', async () => {
    const entry = await addEntry(db!.sql, { translations: { en: { slug: 'outage', title: 'Before' } } })
    await cachedInVarnish(`${POST}/outage`)
    proxy!.refusing = true
    await db!.sql`update entry_translations set title = 'After' where entry_id = ${entry}`
    await waitFor('a refused purge of the entry', () => proxy!.purges.some((purge) => purge.status === 503 && purge.keys.includes(`entry-${entry}`)))
    await Bun.sleep(500)
    // Stale while the edge cannot be purged: the point of the retries.
    expect((await throughVarnish(`${POST}/outage`)).body.data.title).toBe('Before')
    proxy!.refusing = false
    await freshWithin(`${POST}/outage`, ({ body }) => body.data.title === 'After', 2000)
  }, 30_000)

  test('the listener killed at the moment of a write: fresh all the same', async () => {
    const entry = await addEntry(db!.sql, { translations: { en: { slug: 'killed', title: 'Before' } } })
    await cachedInVarnish(`${POST}/killed`)
    await Promise.all([
      db!.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine-listener' and datname = ${db!.name}`,
      db!.sql`update entry_translations set title = 'After' where entry_id = ${entry}`,
    ])
    await freshWithin(`${POST}/killed`, ({ body }) => body.data.title === 'After', 5000)
  }, 30_000)

  test('a statement writing 3 000 entries: a handful of purges, each accepted by Varnish (headers under its 8 KB)', async () => {
    const types = ['bulk-a', 'bulk-b', 'bulk-c']
    for (const slug of types) await addContentType(db!.sql, slug)
    await Bun.sleep(200)
    const before = proxy!.purges.length
    await db!.sql`
      insert into entries (content_type_id, status, published_at, created_at)
      select t.id, 'published', now() - interval '1 hour', now()
      from content_types t, generate_series(1, 1000)
      where t.slug in ('bulk-a', 'bulk-b', 'bulk-c')
    `
    await waitFor('3 000 entry keys purged', () => proxy!.purges.slice(before).flatMap((purge) => purge.keys).filter((key) => key.startsWith('entry-')).length >= 3000)
    const purges = proxy!.purges.slice(before)
    expect(purges.length).toBeLessThanOrEqual(10)
    expect(new Set(purges.map((purge) => purge.status))).toEqual(new Set([200]))
  }, 30_000)

  test('two instances on one database: each change is purged once (and once more after DATABASE_TIMEOUT_MS)', async () => {
    const other = await startService(env())
    try {
      const entry = await addEntry(db!.sql, { translations: { en: { slug: 'two', title: 'Before' } } })
      await cachedInVarnish(`${POST}/two`)
      // The second instance listens and bids for the duty; give it the time to.
      await Bun.sleep(1500)
      const before = proxy!.purges.length
      await db!.sql`update entry_translations set title = 'After' where entry_id = ${entry}`
      await freshWithin(`${POST}/two`, ({ body }) => body.data.title === 'After')
      await Bun.sleep(1500)
      const purged = proxy!.purges.slice(before).filter((purge) => purge.keys.includes(`entry-${entry}`))
      expect(purged.length).toBe(2)
    } finally {
      await other.stop()
    }
  }, 30_000)
})
