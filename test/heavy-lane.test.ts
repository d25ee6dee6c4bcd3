import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { HeavyLane, heavyLaneOf, LaneRefusal, setHeavyLane } from '../src/db/lanes'
import { DEEP_OFFSET, isHeavyList } from '../src/content/list-statement'
import { NO_FILTERS } from '../src/content/parameters'
import { testApp, type TestResponse } from './support/app'
import { createTestDatabase } from './support/database'
import { addContentType, clearContent } from './support/fixtures'
import { waitFor } from './support/wait'

describe('C47: the heavy lane on its own', () => {
  test('C47: no more than its places run at once; the rest wait first come, first served', async () => {
    const lane = new HeavyLane({ slots: 2, line: 10 })
    const order: number[] = []
    const first = await lane.enter(1000)
    const second = await lane.enter(1000)
    const waiting = [3, 4, 5].map((n) => lane.enter(1000).then((leave) => (order.push(n), leave)))
    await Bun.sleep(5)
    expect(lane.load).toEqual({ running: 2, waiting: 3 })
    expect(order).toEqual([])
    first()
    first() // leaving twice gives back one place only
    const third = await waiting[0]
    expect(lane.load).toEqual({ running: 2, waiting: 2 })
    second()
    third()
    for (const leave of await Promise.all(waiting.slice(1))) leave()
    expect(order).toEqual([3, 4, 5])
    expect(lane.load).toEqual({ running: 0, waiting: 0 })
  })

  test('C47: a full line refuses at once; a wait past its time leaves the line, and the next in line still gets the place', async () => {
    const lane = new HeavyLane({ slots: 1, line: 2 })
    const holder = await lane.enter(1000)
    const late = lane.enter(30)
    const patient = lane.enter(5000)
    const started = performance.now()
    await expect(lane.enter(5000)).rejects.toMatchObject({ code: 'HEAVY_QUEUE_FULL' })
    expect(performance.now() - started).toBeLessThan(20)
    const refusal = await late.catch((error) => error)
    expect(refusal).toBeInstanceOf(LaneRefusal)
    expect(refusal.code).toBe('HEAVY_WAIT_TIMEOUT')
    expect(lane.load).toEqual({ running: 1, waiting: 1 })
    holder()
    ;(await patient)()
    expect(lane.load).toEqual({ running: 0, waiting: 0 })
  })

  test('C47: which lists are heavy: deep pages by number, searches, several filters, counting one by one; never a cursor page or one term or an author near the top', () => {
    const at = (offset: number) => ({ start: { offset } })
    const filters = (changes: Partial<typeof NO_FILTERS>) => ({ ...NO_FILTERS, ...changes })
    const pair = (slug: string) => ({ taxonomy: 'tag', slug })
    const cursor = { start: { after: { publishedAt: null, id: 1 } } }
    expect(isHeavyList(at(0))).toBe(false)
    expect(isHeavyList(at(DEEP_OFFSET - 1))).toBe(false)
    expect(isHeavyList(at(DEEP_OFFSET))).toBe(true)
    expect(isHeavyList(cursor)).toBe(false)
    expect(isHeavyList({ ...at(0), countByScan: true })).toBe(true)
    expect(isHeavyList({ ...at(0), filters: filters({ terms: [pair('bun')] }) })).toBe(false)
    expect(isHeavyList({ ...cursor, filters: filters({ author: 3 }) })).toBe(false)
    expect(isHeavyList({ ...at(DEEP_OFFSET), filters: filters({ terms: [pair('bun')] }) })).toBe(true)
    expect(isHeavyList({ ...at(0), filters: filters({ terms: [pair('bun'), pair('sql')] }) })).toBe(true)
    expect(isHeavyList({ ...at(0), filters: filters({ terms: [pair('bun')], author: 3 }) })).toBe(true)
    expect(isHeavyList({ ...cursor, filters: filters({ search: 'zeppelin' }) })).toBe(true)
  })
})

describe('C47: heavy statements against a real PostgreSQL', () => {
  const ENTRIES = 1300
  let db: Awaited<ReturnType<typeof createTestDatabase>>

  beforeAll(async () => {
    db = await createTestDatabase()
    await clearContent(db.sql)
    const typeId = await addContentType(db.sql, 'post')
    // Entry n was published n minutes ago; every tenth one's title has the word searched for.
    await db.sql`
      insert into entries (id, content_type_id, status, published_at, created_at)
      select n, ${typeId}, 'published', now() - n * interval '1 minute', '2026-01-01'
      from generate_series(1, ${ENTRIES}) n
    `
    await db.sql`
      insert into entry_translations (entry_id, language_code, title, slug)
      select n, 'en', case when n % 10 = 0 then 'Zeppelin ' || n else 'Entry ' || n end, 'entry-' || n
      from generate_series(1, ${ENTRIES}) n
    `
    // Searches wait for advisory lock 4747 before they read anything: a test holds it to keep
    // a real search statement running on the server for as long as it needs (lists never call this).
    await db.sql.unsafe(`
      create or replace function vitrine_search_config(language_code text) returns regconfig language plpgsql immutable as $$
      begin
        perform pg_advisory_lock_shared(4747);
        perform pg_advisory_unlock_shared(4747);
        return 'pg_catalog.simple'::regconfig;
      end $$
    `)
  })
  afterAll(() => db.sql.end())

  /** Holds advisory lock 4747 on a connection of its own until `release`. */
  async function holdSearches() {
    const holder = await db.sql.reserve()
    await holder`select pg_advisory_lock(4747)`
    let held = true
    return {
      release: async () => {
        if (!held) return
        held = false
        await holder`select pg_advisory_unlock(4747)`
        holder.release()
      },
    }
  }

  /** Until n of the service's backends wait for lock 4747. */
  const searchesWaiting = (n: number) =>
    waitFor(`${n} searches waiting on the server`, async () => {
      const [row] = await db.sql`
        select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and application_name = 'vitrine' and wait_event_type = 'Lock' and wait_event = 'advisory'
      `
      return row.waiting === n
    })

  const searchStatements = (statements: string[]) => statements.filter((text) => text.includes('websearch_to_tsquery')).length
  const ids = (response: TestResponse) => response.body.data.map((item: { id: number }) => item.id)

  test('C47/C22: with the one heavy place taken, a deep page waits its turn, one past the line gets 503 at once without a statement, and cheap pages are never queued behind the heavy statement on its connection', async () => {
    const api = testApp(db.url, { DATABASE_POOL_MAX: '3', DATABASE_HEAVY_MAX: '1', DATABASE_HEAVY_QUEUE: '1' })
    // Every connection opened and both statements prepared on each, with a lane wide enough for
    // that: a statement's first run on a connection keeps it to itself (the driver describes it first).
    setHeavyLane(api.sql, { slots: 3, line: 0 })
    for (const path of ['/api/v1/content/post?search=zeppelin', '/api/v1/content/post?page=2']) {
      expect((await Promise.all([1, 2, 3].map(() => api.get(path)))).map((response) => response.status)).toEqual([200, 200, 200])
    }
    setHeavyLane(api.sql, { slots: 1, line: 1 })
    const lock = await holdSearches()
    try {
      const search = api.get('/api/v1/content/post?search=zeppelin&per_page=5')
      await searchesWaiting(1)
      const deepPage = api.get(`/api/v1/content/post?page=${DEEP_OFFSET / 20 + 2}&per_page=20`)
      await waitFor('the deep page in the line', () => heavyLaneOf(api.sql)!.load.waiting === 1)
      const sent = searchStatements(api.statements)

      const refused = await api.get('/api/v1/content/post?search=entry')
      expect(refused.status).toBe(503)
      expect(refused.body).toEqual({ error: 'Service unavailable.' })
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(searchStatements(api.statements)).toBe(sent)
      await api.loggedRequest('/api/v1/content/post?search=entry')
      expect(api.logs.some((line) => line.includes('"reason":"busy"') && line.includes('HEAVY_QUEUE_FULL'))).toBe(true)

      // More cheap pages at once than the pool has connections: the driver pipelines onto busy
      // connections, and any that went behind the blocked search would wait out their deadline.
      const cheap = await Promise.all(Array.from({ length: 12 }, (_, i) => api.get(`/api/v1/content/post?page=${i + 1}&per_page=7`)))
      expect(cheap.map((response) => response.status)).toEqual(Array(12).fill(200))
      expect(cheap.map((response) => ids(response)[0])).toEqual(Array.from({ length: 12 }, (_, i) => 7 * i + 1))
      expect(heavyLaneOf(api.sql)!.load).toEqual({ running: 1, waiting: 1 })

      await lock.release()
      const [searched, deep] = await Promise.all([search, deepPage])
      expect(searched.status).toBe(200)
      expect(searched.body.meta.total).toBe(ENTRIES / 10)
      expect(deep.status).toBe(200)
      expect(ids(deep)[0]).toBe(DEEP_OFFSET + 20 + 1)
      expect(heavyLaneOf(api.sql)!.load).toEqual({ running: 0, waiting: 0 })
    } finally {
      await lock.release()
      await api.close()
    }
  })

  test('C47/C22: heavy requests that outwait DATABASE_TIMEOUT_MS get 503, their statements are cancelled on the server, and the lane is whole again afterwards', async () => {
    const api = testApp(db.url, { DATABASE_POOL_MAX: '3', DATABASE_HEAVY_MAX: '1', DATABASE_HEAVY_QUEUE: '4', DATABASE_TIMEOUT_MS: '700' })
    const lock = await holdSearches()
    try {
      const started = performance.now()
      // Each of them blocks on the server once it has a place, whatever the order they reach the lane in:
      // a deep page that reads no search would answer 200 if it came in a few ms later than the first
      // search and got the place freed at that one's deadline with more than MIN_HEAVY_TIME_MS left (a CI run did).
      const heavy = [api.get('/api/v1/content/post?search=zeppelin'), api.get('/api/v1/content/post?search=entry'), api.get(`/api/v1/content/post?search=entry&page=${DEEP_OFFSET / 20 + 1}`)]
      const answers = await Promise.all(heavy)
      expect(answers.map((response) => response.status)).toEqual([503, 503, 503])
      expect(answers.every((response) => response.headers.has('retry-after'))).toBe(true)
      expect(performance.now() - started).toBeLessThan(3000)
      await searchesWaiting(0)
      // A place is given back when its statement settles here, once the server's answer to the cancel
      // has arrived: just after the server stops showing it waiting (a loaded run saw it a moment later).
      await waitFor('the heavy lane whole again', () => {
        const { running, waiting } = heavyLaneOf(api.sql)!.load
        return running === 0 && waiting === 0
      })
      await lock.release()
      const after = await api.get('/api/v1/content/post?search=zeppelin&order=date&per_page=3')
      expect(after.status).toBe(200)
      expect(ids(after)).toEqual([10, 20, 30])
    } finally {
      await lock.release()
      await api.close()
    }
  })
})
