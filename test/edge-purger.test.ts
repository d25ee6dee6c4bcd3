import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { listenForChanges, type ChangeListener } from '../src/cache/change-listener'
import { loadConfig } from '../src/config'
import { openReadPool } from '../src/db/connect'
import { EdgePurger } from '../src/edge/edge-purger'
import { takePurgeDuty } from '../src/edge/purge-duty'
import { sendPurge } from '../src/edge/purge-targets'
import { createLogger } from '../src/log'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addContentType, addEntry, addTerm } from './support/fixtures'
import { startPurgeRecorder, type PurgeRecorder, type RecordedRequest } from './support/purge-recorder'
import { waitFor } from './support/wait'

/**
 * The purger in process (C51), against a real PostgreSQL and purge endpoints
 * on raw sockets: what goes on the wire, batches, retries, the second purge,
 * the duty. test/edge.test.ts checks freshness through a real Varnish.
 */
const db = await createTestDatabase()
const log = createLogger('silent')
const apis = loadConfig({ FASTLY_API_TOKEN: 'fastly-token', CLOUDFLARE_API_TOKEN: 'cloudflare-token' })
const sql = openReadPool(db.url, { ...apis, databasePoolMax: 4 })
const post = await addContentType(db.sql, 'post')

interface Running {
  purger: EdgePurger
  listener: ChangeListener
  duty: { stop(): Promise<void> }
  /** Resolved once the listener has heard its LISTEN answered the first time. */
  listening: Promise<void>
}
const running: Running[] = []
const recorders: PurgeRecorder[] = []

/** A purger as main.ts wires it: its own listener and its own bid for the duty. */
async function startPurger(targets: string, options: { timeoutMs?: number; maxPendingKeys?: number; duty?: boolean; pool?: typeof sql } = {}): Promise<Running> {
  const config = loadConfig({ PURGE_URLS: targets, FASTLY_API_TOKEN: 'fastly-token', CLOUDFLARE_API_TOKEN: 'cloudflare-token', ...(api ? { FASTLY_API_URL: api.url, CLOUDFLARE_API_URL: api.url } : {}) })
  const purger = new EdgePurger({ sql: options.pool ?? sql, targets: config.purgeTargets, apis: config, log, timeoutMs: options.timeoutMs ?? 60_000, maxPendingKeys: options.maxPendingKeys })
  const listening = Promise.withResolvers<void>()
  const heard = purger.onListening.bind(purger)
  purger.onListening = () => (heard(), listening.resolve())
  const listener = listenForChanges(db.url, purger, { timeoutMs: 5000, log })
  const duty = takePurgeDuty(db.url, { timeoutMs: 5000, checkMs: 50, log, onTaken: () => purger.takeDuty(), onDropped: () => purger.dropDuty() })
  const started = { purger, listener, duty, listening: listening.promise }
  running.push(started)
  return started
}

async function stopPurger({ purger, listener, duty }: Running): Promise<void> {
  await duty.stop()
  purger.close()
  await listener.stop()
}

function recorder(answer?: (request: RecordedRequest) => number): PurgeRecorder {
  const started = startPurgeRecorder(answer)
  recorders.push(started)
  return started
}

/** The keys of the PURGE requests that were acknowledged, each time it was. */
function xkeysPurged(at: PurgeRecorder, status = 200): string[] {
  return at.requests.filter((request) => request.method === 'PURGE' && at.answer(request) === status).flatMap((request) => request.headers.xkey.split(' '))
}

/** The first purge of everything: the duty was taken. */
async function onDuty(at: PurgeRecorder): Promise<void> {
  await waitFor('the purge of everything when the duty is taken', () => xkeysPurged(at).includes('vitrine'))
}

let api: PurgeRecorder | undefined

afterEach(async () => {
  for (const each of running.splice(0)) await stopPurger(each)
  for (const each of recorders.splice(0)) each.stop()
  api = undefined
})
afterAll(() => sql.end())

describe('C51: what goes on the wire', () => {
  test('an http(s) target gets PURGE <its path> with an xkey header, as its bytes show', async () => {
    const at = recorder()
    await sendPurge({ kind: 'xkey', url: `${at.url}varnish/purge?x=1` }, ['entry-1', 'lists-post'], apis)
    expect(at.requests.map(({ method, path, headers }) => ({ method, path, xkey: headers.xkey }))).toEqual([{ method: 'PURGE', path: '/varnish/purge?x=1', xkey: 'entry-1 lists-post' }])
  })

  test('non-2xx, refused and unanswered purges are failures', async () => {
    const at = recorder(() => 503)
    await expect(sendPurge({ kind: 'xkey', url: at.url }, ['a'], apis)).rejects.toThrow(`${at.url} answered 503`)
    at.stop()
    await expect(sendPurge({ kind: 'xkey', url: at.url }, ['a'], apis)).rejects.toThrow()
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const started = performance.now()
    await expect(sendPurge({ kind: 'xkey', url: `http://127.0.0.1:${silent.port}/` }, ['a'], apis)).rejects.toThrow()
    expect(performance.now() - started).toBeGreaterThanOrEqual(1900)
    silent.stop(true)
  })

  test('Fastly and Cloudflare: method, path, auth header and batch sizes (256 keys, 100 tags) for a statement writing 300 entries', async () => {
    api = recorder()
    const { purger } = await startPurger('fastly://SERVICE1,cloudflare://zone-1')
    await waitFor('the duty', () => api!.requests.length >= 2)
    await db.sql`insert into entries (content_type_id, status, published_at, created_at) select ${post}, 'published', now() - interval '1 hour', now() from generate_series(1, 300)`
    const entryKeys = (path: string) => api!.requests.filter((request) => request.path === path).flatMap((request) => JSON.parse(request.body).surrogate_keys ?? JSON.parse(request.body).tags).filter((key: string) => key.startsWith('entry-'))
    await waitFor('every key acknowledged', () => purger.pendingKeys === 0 && entryKeys('/service/SERVICE1/purge').length >= 300 && entryKeys('/client/v4/zones/zone-1/purge_cache').length >= 300)
    const fastly = api.requests.filter((request) => request.path === '/service/SERVICE1/purge')
    const cloudflare = api.requests.filter((request) => request.path === '/client/v4/zones/zone-1/purge_cache')
    expect(new Set([...fastly, ...cloudflare].map((request) => request.method))).toEqual(new Set(['POST']))
    expect(new Set(fastly.map((request) => request.headers['fastly-key']))).toEqual(new Set(['fastly-token']))
    expect(new Set(cloudflare.map((request) => request.headers.authorization))).toEqual(new Set(['Bearer cloudflare-token']))
    const fastlyKeys = fastly.map((request) => JSON.parse(request.body).surrogate_keys as string[])
    const cloudflareTags = cloudflare.map((request) => JSON.parse(request.body).tags as string[])
    // Everything as the duty is taken; then the type's lists as the notification arrives, alone or in the batch of
    // what the read of the log names (keys told while a batch is in flight go with the next): batches of at most
    // 256 keys and 100 tags, the 300 entries' keys filling them.
    expect(Math.max(...fastlyKeys.map((keys) => keys.length))).toBe(256)
    expect(Math.max(...cloudflareTags.map((tags) => tags.length))).toBe(100)
    expect(cloudflareTags.flat().filter((tag) => tag.startsWith('entry-')).length).toBe(300)
    expect(fastlyKeys.flat()).toContain('lists-post')
    expect(fastlyKeys.flat().filter((key) => key.startsWith('entry-')).length).toBe(300)
    expect(new Set(cloudflareTags.flat())).toEqual(new Set(fastlyKeys.flat()))
    expect(fastlyKeys[0]).toEqual(['vitrine'])
  })

  test('a Cloudflare target makes answers carry Cache-Tag, the Surrogate-Key tags comma-separated', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'tagged' } } })
    const app = testApp(db.url, { PURGE_URLS: 'cloudflare://zone-1', CLOUDFLARE_API_TOKEN: 'c' })
    const plain = testApp(db.url)
    try {
      const answer = await app.get('/api/v1/content/post/tagged')
      expect([answer.headers.get('surrogate-key'), answer.headers.get('cache-tag')]).toEqual([`type-post entry-${entry} vitrine`, `type-post,entry-${entry},vitrine`])
      expect((await plain.get('/api/v1/content/post/tagged')).headers.get('cache-tag')).toBeNull()
    } finally {
      await app.close()
      await plain.close()
    }
  })
})

describe('C51: what is purged', () => {
  test('an entry written: its key and its type\'s lists; a term renamed: the entries carrying it and the discovery keys; a content type renamed: everything', async () => {
    const term = await addTerm(db.sql, 'topic', 'Bun')
    const entry = await addEntry(db.sql, { termIds: [term], translations: { en: { slug: 'keys' } } })
    const at = recorder()
    await startPurger(at.url)
    await onDuty(at)
    const purgedAfter = async (write: () => Promise<unknown>, expected: string[]) => {
      const before = at.requests.length
      await write()
      await waitFor(`${expected.join(' ')} purged`, () => expected.every((key) => at.requests.slice(before).some((request) => request.headers.xkey.split(' ').includes(key))))
      return at.requests.slice(before).flatMap((request) => request.headers.xkey.split(' '))
    }
    // The early lists purge and the batch may both carry lists-post (C51 allows it): the keys, not one interleaving of them.
    expect(new Set(await purgedAfter(() => db.sql`update entry_translations set title = 'Keys' where entry_id = ${entry}`, [`entry-${entry}`]))).toEqual(new Set([`lists-post`, `entry-${entry}`]))
    const renamed = await purgedAfter(() => db.sql`update terms set name = 'Bun 2' where id = ${term}`, [`entry-${entry}`, 'taxonomies'])
    expect(renamed).toEqual(expect.arrayContaining(['languages', 'content-types', 'taxonomies', 'lists-post', `entry-${entry}`]))
    expect(renamed).not.toContain('vitrine')
    await purgedAfter(() => db.sql`update content_types set name = 'Posts' where slug = 'post'`, ['vitrine', 'type-post'])
  })

  test('an embargoed entry going live: its key and its lists, at its second, with no write', async () => {
    const at = recorder()
    await startPurger(at.url)
    await onDuty(at)
    const goLive = Date.now() + 3000
    const entry = await addEntry(db.sql, { publishedAt: new Date(goLive), translations: { en: { slug: 'embargoed' } } })
    // The insert of an entry not yet live purges its lists, never its key (C2): the first purge of the key is the
    // go-live's, 3 s ahead so that this test's own steps are done long before it on a loaded machine.
    await Bun.sleep(300)
    const before = at.requests.length
    await waitFor('the go-live purge', () => at.requests.slice(before).some((request) => request.headers.xkey.split(' ').includes(`entry-${entry}`)), 5000)
    const purge = at.requests.slice(before).find((request) => request.headers.xkey.split(' ').includes(`entry-${entry}`))!
    expect(purge.headers.xkey.split(' ')).toContain('lists-post')
    // At its second: not before (the database's clock is this machine's), and well within the next.
    const arrived = performance.timeOrigin + purge.at
    expect(arrived).toBeGreaterThanOrEqual(goLive)
    expect(arrived - goLive).toBeLessThan(1000)
  })
})

describe('C51: delivery that loses nothing', () => {
  test('a statement writing 3 000 entries of three types is a handful of PURGE requests, each under 7 500 bytes of headers', async () => {
    const at = recorder()
    const { purger } = await startPurger(at.url)
    await onDuty(at)
    for (const slug of ['news', 'event', 'video']) await addContentType(db.sql, slug)
    await Bun.sleep(100)
    const before = at.requests.length
    await db.sql`
      insert into entries (content_type_id, status, published_at, created_at)
      select t.id, 'published', now() - interval '1 hour', now()
      from content_types t, generate_series(1, 1000)
      where t.slug in ('news', 'event', 'video')
    `
    await waitFor('3 000 entry keys purged', () => xkeysPurged(at).filter((key) => key.startsWith('entry-')).length >= 3000 && purger.pendingKeys === 0)
    const purges = at.requests.slice(before)
    expect(purges.length).toBeLessThanOrEqual(10)
    expect(Math.max(...purges.map((request) => request.headBytes))).toBeLessThan(7500)
    // The types' lists go as the notification arrives and again with the entries the read of the log names.
    expect([...new Set(purges.flatMap((request) => request.headers.xkey.split(' ')).filter((key) => key.startsWith('lists-')))].sort()).toEqual(['lists-event', 'lists-news', 'lists-video'])
  })

  test('a type\'s lists go as the notification arrives, while the read of the change log still waits for the database', async () => {
    const at = recorder()
    // One connection, held by a slow statement: the purger's read of the log waits behind it.
    const pool = openReadPool(db.url, { ...apis, databasePoolMax: 1 })
    try {
      await startPurger(at.url, { pool })
      await onDuty(at)
      const busy = pool`select pg_sleep(1.5)`.then(() => {})
      await Bun.sleep(50)
      const entry = await addEntry(db.sql, { translations: { en: { slug: 'early-lists' } } })
      await waitFor('the lists purged', () => xkeysPurged(at).includes('lists-post'))
      expect(xkeysPurged(at)).not.toContain(`entry-${entry}`)
      await busy
      await waitFor('the entry purged once the read runs', () => xkeysPurged(at).includes(`entry-${entry}`))
    } finally {
      await pool.end()
    }
  })

  test('a target answering 503 for a while loses nothing, and is purged within a second of answering again', async () => {
    let failing = true
    const at = recorder(() => (failing ? 503 : 200))
    const { purger } = await startPurger(at.url)
    await waitFor('a first failed purge', () => at.requests.length > 0)
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'while-down' } } })
    await waitFor('the entry refused twice', () => xkeysPurged(at, 503).filter((key) => key === `entry-${entry}`).length >= 2)
    expect(purger.pendingKeys).toBeGreaterThan(0)
    failing = false
    const back = performance.now()
    await waitFor('the entry purged once the endpoint answers', () => xkeysPurged(at).includes(`entry-${entry}`))
    expect(performance.now() - back).toBeLessThan(1200)
    expect(xkeysPurged(at)).toContain('vitrine')
    expect(purger.requestCounts.get(at.url)!.failed).toBeGreaterThan(1)
  })

  test('past the bound of pending keys, they collapse into every type key and the discovery keys', async () => {
    let failing = true
    const at = recorder(() => (failing ? 503 : 200))
    const { purger } = await startPurger(at.url, { maxPendingKeys: 50 })
    await waitFor('a first failed purge', () => at.requests.length > 0)
    await db.sql`insert into entries (content_type_id, status, published_at, created_at) select ${post}, 'published', now() - interval '1 hour', now() from generate_series(1, 60)`
    await waitFor('a refused purge of the collapsed keys', () => xkeysPurged(at, 503).includes('type-post'))
    expect(purger.pendingKeys).toBeLessThan(50)
    failing = false
    await waitFor('acknowledged', () => purger.pendingKeys === 0 && xkeysPurged(at).length > 0)
    const keys = xkeysPurged(at)
    expect(keys).toContain('type-post')
    expect(keys).toEqual(expect.arrayContaining(['languages', 'content-types', 'taxonomies']))
    expect(keys.filter((key) => key.startsWith('entry-'))).toEqual([])
  })

  test('every purge goes out once more after DATABASE_TIMEOUT_MS', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'twice' } } })
    const at = recorder()
    await startPurger(at.url, { timeoutMs: 400 })
    await onDuty(at)
    // The second purge is timed from when the purger heard the write, after this moment (the recorder stamps with the same clock).
    const asked = performance.now()
    await db.sql`update entry_translations set title = 'Twice' where entry_id = ${entry}`
    const key = `entry-${entry}`
    await waitFor('the second purge', () => xkeysPurged(at).filter((each) => each === key).length === 2)
    const times = at.requests.filter((request) => request.headers.xkey.split(' ').includes(key)).map((request) => request.at)
    expect(times[1] - asked).toBeGreaterThanOrEqual(400)
    await Bun.sleep(600)
    expect(xkeysPurged(at).filter((each) => each === key).length).toBe(2)
  })

  test('a lost listener: everything is purged once it is back', async () => {
    const at = recorder()
    const started = await startPurger(at.url)
    await onDuty(at)
    // A connection ended before it ever listened is no lost listener: it has missed nothing.
    await started.listening
    const before = xkeysPurged(at).filter((key) => key === 'vitrine').length
    await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine-listener' and datname = ${db.name}`
    await waitFor('everything purged again', () => xkeysPurged(at).filter((key) => key === 'vitrine').length > before)
  })
})

describe('C51: one purger per database', () => {
  test('two instances purge each change once; when the holder goes, the other takes over and purges everything', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'once' } } })
    const at = recorder()
    const first = await startPurger(at.url, { timeoutMs: 300 })
    await onDuty(at)
    const second = await startPurger(at.url, { timeoutMs: 300 })
    await Bun.sleep(300)
    await db.sql`update entry_translations set title = 'Once' where entry_id = ${entry}`
    await Bun.sleep(1000)
    // Once, and once more after DATABASE_TIMEOUT_MS: never once per instance.
    expect(xkeysPurged(at).filter((key) => key === `entry-${entry}`).length).toBe(2)
    expect(xkeysPurged(at).filter((key) => key === 'vitrine').length).toBe(2)
    await stopPurger(first)
    running.splice(running.indexOf(first), 1)
    await waitFor('the other instance purges everything', () => xkeysPurged(at).filter((key) => key === 'vitrine').length === 3)
    const next = await addEntry(db.sql, { translations: { en: { slug: 'after' } } })
    await waitFor('the taker-over purges changes', () => xkeysPurged(at).includes(`entry-${next}`))
    expect(running).toContain(second)
  })
})
