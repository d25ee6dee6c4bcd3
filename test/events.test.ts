import { afterAll, afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { encodeEventMark } from '../src/changes/event-mark'
import { MAX_IDS_PER_EVENT, MAX_ROWS_PER_READ } from '../src/changes/event-statement'
import { EventFeed } from '../src/changes/event-feed'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { writeInFlight } from './support/writer-in-flight'
import { eventTestApp, type StreamReader } from './support/event-stream'
import { addAuthor, addContentType, addEntry, addImage, addLanguage, addTerm, clearContent, setDefaultLanguage } from './support/fixtures'

/**
 * C49: `GET /api/v1/events`, Server-Sent Events of what changed, from the
 * notifications and the change log (C48's), resumable with Last-Event-ID.
 */
const db = await createTestDatabase()
const api = await eventTestApp(db.url, { heartbeatMs: 300, maxSubscribers: 4, maxBacklogBytes: 4096 })
afterAll(async () => {
  await api.close()
  await db.sql.end()
})
afterEach(() => api.cancelStreams())
beforeEach(async () => {
  await clearContent(db.sql)
  await db.sql`delete from custom_fields`
  await addContentType(db.sql, 'post')
  await addContentType(db.sql, 'page')
})

type Received = { event: string; id: string; data: { type: string; ids: number[] | null } }

/** Events until one satisfies `last` (the write a test made last): everything the stream said about the writes before it. */
async function eventsUntil(stream: StreamReader, last: (event: Received) => boolean): Promise<Received[]> {
  const events: Received[] = []
  for (;;) {
    const event = await stream.nextEvent()
    events.push(event)
    if (last(event)) return events
  }
}

/** The ids each type's events named (null: anything of the type), merged. */
function reached(events: Received[]): Record<string, number[] | null> {
  const out: Record<string, number[] | null> = {}
  for (const { data } of events) {
    const before = out[data.type]
    out[data.type] = data.ids === null || before === null ? null : [...new Set([...(before ?? []), ...data.ids])].sort((a, b) => a - b)
  }
  return out
}

/**
 * A write whose event says "this is the last": an entry of a type whose slug
 * sorts after the others (the events of one read come by type slug).
 */
async function marker(): Promise<(event: Received) => boolean> {
  const id = await addEntry(db.sql, { type: MARKER })
  return (event) => event.data.type === MARKER && (event.data.ids === null || event.data.ids.includes(id))
}
const MARKER = 'zz-marker'

/** An event id's place in the change log (`<position>.<microseconds>[.<xids>]`). */
const positionOf = (id: string) => Number(id.split('.')[0])

describe('C49 the stream', () => {
  test('text/event-stream, no-store, CORS; it opens with an id and nothing else', async () => {
    const { response, stream } = await api.open('/api/v1/events', { origin: 'https://app.example.com' })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    const first = await stream.next()
    expect(first).toEqual({ id: expect.stringMatching(/^\d+\.\d+(\.[\d-]+)?$/) })
    await stream.cancel()
  })

  test('a comment line keeps an idle stream open (every 15 s by default; 300 ms here), with the id the stream has reached', async () => {
    const { stream } = await api.open()
    const { id } = await stream.next()
    const heartbeat = await stream.next(3000)
    expect(heartbeat).toEqual({ comment: '', id: expect.stringMatching(/^\d+\.\d+(\.[\d-]+)?$/) })
    // The feed's mark: where the stream opened, or further if the log moved since.
    expect(positionOf(heartbeat.id!)).toBeGreaterThanOrEqual(positionOf(id!))
    await stream.cancel()
  })

  test('a stream whose types stay quiet: its heartbeats carry the id others reached, and resuming from it reads nothing again', async () => {
    const { stream } = await api.open('/api/v1/events?types=page')
    const { id: opened } = await stream.next()
    const watcher = await api.open('/api/v1/events?types=post')
    await watcher.stream.next()
    const written = await addEntry(db.sql)
    const told = await watcher.stream.nextEvent()
    expect(told.data).toEqual({ type: 'post', ids: [written] })
    await watcher.stream.cancel()
    // The page stream heard nothing, but its next heartbeat moves its id past the post's write.
    let heartbeat = await stream.next(3000)
    while (positionOf(heartbeat.id!) < positionOf(told.id)) heartbeat = await stream.next(3000)
    expect(heartbeat.comment).toBe('')
    expect(positionOf(heartbeat.id!)).toBeGreaterThan(positionOf(opened!))
    await stream.cancel()
    // A client resuming from it is where it was: no reset, and the page it writes next is its first event.
    const { stream: resumed } = await api.open('/api/v1/events?types=page', { 'last-event-id': heartbeat.id! })
    const page = await addEntry(db.sql, { type: 'page' })
    expect((await resumed.nextEvent()).data).toEqual({ type: 'page', ids: [page] })
    await resumed.cancel()
  })

  test('on a site nobody writes to, heartbeats read the log again once the mark is older than markRefreshMs (1 hour): their ids move on in time', async () => {
    const quiet = await eventTestApp(db.url, { heartbeatMs: 100, markRefreshMs: 250 })
    try {
      const { stream } = await quiet.open()
      const { id: opened } = await stream.next()
      const timeOf = (id: string) => BigInt(id.split('.')[1]!)
      const deadline = performance.now() + 3000
      let heartbeat = await stream.next(3000)
      while (timeOf(heartbeat.id!) === timeOf(opened!) && performance.now() < deadline) heartbeat = await stream.next(3000)
      // Same place in the log (nothing was written), a later time: what a resume after the retention is measured by.
      expect(positionOf(heartbeat.id!)).toBe(positionOf(opened!))
      expect(timeOf(heartbeat.id!) - timeOf(opened!)).toBeGreaterThanOrEqual(250_000n)
    } finally {
      await quiet.cancelStreams()
      await quiet.close()
    }
  })

  test('HEAD answers the headers alone; POST is 405; OPTIONS is a CORS preflight', async () => {
    const head = await api.app.handle(new Request('http://localhost/api/v1/events', { method: 'HEAD' }))
    expect([head.status, head.headers.get('content-type'), await head.text()]).toEqual([200, 'text/event-stream', ''])
    expect(api.feed.subscribers).toBe(0)
    const post = await api.get('/api/v1/events', { method: 'POST' })
    expect([post.status, post.body, post.headers.get('allow')]).toEqual([405, { error: 'Method not allowed.' }, 'GET, HEAD, OPTIONS'])
    const preflight = await api.get('/api/v1/events', { method: 'OPTIONS', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'last-event-id' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('last-event-id')
  })

  test('an unknown type in types is 404 as C5; a malformed Last-Event-ID is 400; neither opens a stream', async () => {
    const unknown = await api.get('/api/v1/events?types=post,nope')
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'Content type not found.' }])
    for (const id of ['abc', '1.2.x', '1', `1.${(BigInt(Date.now()) + 10n * 86_400_000n) * 1000n}`, `1.${BigInt(Date.now()) * 1000n}.99999999999999999999`]) {
      const bad = await api.get('/api/v1/events', { headers: { 'last-event-id': id } })
      expect([id, bad.status, bad.body]).toEqual([id, 400, { error: 'The Last-Event-ID header is not an event id of this stream.' }])
    }
    expect(api.feed.subscribers).toBe(0)
  })
})

describe('C49 each kind of write reaches the entries that show it, after the commit', () => {
  async function scene() {
    const author = await addAuthor(db.sql, 'Ada')
    const image = await addImage(db.sql, 'a.jpg', { thumbnail: 'a-t.jpg' })
    const term = await addTerm(db.sql, 'tag', 'Bun')
    const [{ id: field }] = await db.sql`insert into custom_fields (content_type_id, key) select id, 'rating' from content_types where slug = 'post' returning id`
    const shown = await addEntry(db.sql, { authorId: author, imageId: image, termIds: [term] })
    const other = await addEntry(db.sql)
    await db.sql`insert into field_values (entry_id, custom_field_id, value) values (${shown}, ${field}, '1')`
    return { author, image, term, field, shown, other }
  }
  type Scene = Awaited<ReturnType<typeof scene>>

  const cases: [string, (s: Scene) => Promise<unknown>, (s: Scene) => Record<string, number[] | null>][] = [
    ['an entry inserted', async () => addEntry(db.sql, { id: 777 }), () => ({ post: [777] })],
    ['a translation changed', (s) => db.sql`update entry_translations set title = 'New' where entry_id = ${s.shown}`, (s) => ({ post: [s.shown] })],
    ['an author renamed', (s) => db.sql`update authors set name = 'Grace' where id = ${s.author}`, (s) => ({ post: [s.shown] })],
    ['an image moved', (s) => db.sql`update media set path = 'b.jpg' where id = ${s.image}`, (s) => ({ post: [s.shown] })],
    ['a variant added', (s) => db.sql`insert into media_variants (media_id, name, path) values (${s.image}, 'medium', 'm.jpg')`, (s) => ({ post: [s.shown] })],
    ['a term renamed', (s) => db.sql`update terms set name = 'Deno' where id = ${s.term}`, (s) => ({ post: [s.shown] })],
    ['a taxonomy renamed', () => db.sql`update taxonomies set name = 'Tags' where slug = 'tag'`, (s) => ({ post: [s.shown] })],
    ['an entry term removed', (s) => db.sql`delete from entry_terms where entry_id = ${s.shown}`, (s) => ({ post: [s.shown] })],
    ['a field value changed', (s) => db.sql`update field_values set value = '2' where entry_id = ${s.shown}`, (s) => ({ post: [s.shown] })],
    ['an entry unpublished (it stopped being live)', (s) => db.sql`update entries set status = 'draft' where id = ${s.other}`, (s) => ({ post: [s.other] })],
    ['an entry deleted', (s) => db.sql`delete from entries where id = ${s.other}`, (s) => ({ post: [s.other] })],
    ['an entry moved to another type: both types', (s) => db.sql`update entries set content_type_id = (select id from content_types where slug = 'page') where id = ${s.other}`, (s) => ({ post: [s.other], page: [s.other] })],
    ['a custom field renamed: anything of the type', (s) => db.sql`update custom_fields set key = 'stars' where id = ${s.field}`, () => ({ post: null })],
    ['the type renamed: anything of the type', () => db.sql`update content_types set name = 'Posts' where slug = 'post'`, () => ({ post: null })],
    [
      'the default language changed: anything of every type',
      async () => {
        await addLanguage(db.sql, 'fr')
        await setDefaultLanguage(db.sql, 'fr')
      },
      () => ({ page: null, post: null }),
    ],
    ['TRUNCATE entry_terms: anything of every type', () => db.sql`truncate entry_terms`, () => ({ page: null, post: null })],
  ]
  for (const [name, write, expected] of cases) {
    test(name, async () => {
      const s = await scene()
      const { stream } = await api.open()
      await stream.next()
      await write(s)
      const got = reached(await eventsUntil(stream, await marker()))
      delete got[MARKER]
      expect(got).toEqual(expected(s))
      if (name.includes('default language')) {
        await setDefaultLanguage(db.sql, 'en')
      }
      await stream.cancel()
    })
  }

  test('C2: a draft written, or an embargoed entry added or edited, is never named; it is at its go-live second, with no write', async () => {
    const { stream } = await api.open('/api/v1/events?types=post')
    await stream.next()
    const draft = await addEntry(db.sql, { status: 'draft' })
    await db.sql`update entry_translations set title = 'Still a draft' where entry_id = ${draft}`
    const embargoed = await addEntry(db.sql, { publishedAt: new Date(Date.now() + 1500) })
    await db.sql`update entry_translations set title = 'Soon' where entry_id = ${embargoed}`
    const seen = await eventsUntil(stream, (event) => event.data.ids?.includes(embargoed) ?? false)
    const [{ at }] = await db.sql`select published_at as at from entries where id = ${embargoed}`
    expect(Date.now()).toBeGreaterThanOrEqual(new Date(at).getTime())
    // Before it, nothing: neither the draft nor the embargoed entry before its time.
    expect(seen.slice(0, -1).flatMap((event) => event.data.ids ?? [])).toEqual([])
    expect(seen.at(-1)!.data).toEqual({ type: 'post', ids: [embargoed] })
    await stream.cancel()
  })

  test('types filters the stream: a page written is not told to a subscriber of posts', async () => {
    const { stream } = await api.open('/api/v1/events?types=post')
    await stream.next()
    await addEntry(db.sql, { type: 'page' })
    const post = await addEntry(db.sql)
    const events = await eventsUntil(stream, (event) => event.data.ids?.includes(post) ?? false)
    expect(events.map((event) => event.data.type)).toEqual(events.map(() => 'post'))
    await stream.cancel()
  })

  test(`a bulk write says ids: null past ${MAX_IDS_PER_EVENT} entries of a type`, async () => {
    const { stream } = await api.open('/api/v1/events?types=post')
    await stream.next()
    await db.sql`insert into entries (content_type_id, status, published_at) select (select id from content_types where slug = 'post'), 'published', now() - interval '1 hour' from generate_series(1, ${MAX_IDS_PER_EVENT + 1})`
    expect((await stream.nextEvent()).data).toEqual({ type: 'post', ids: null })
    await stream.cancel()
  })

  test(`a bulk write (past ${MAX_ROWS_PER_READ} rows of the log, the cap of one read) is told whole (ids: null) for the types it wrote, and the stream goes on`, async () => {
    const { stream } = await api.open()
    await stream.next()
    await db.sql`insert into entries (content_type_id, status, published_at) select (select id from content_types where slug = 'post'), 'published', now() - interval '1 hour' from generate_series(1, ${MAX_ROWS_PER_READ + 1})`
    const got = reached(await eventsUntil(stream, await marker()))
    // The marker may be read with the bulk write (then told whole too).
    delete got[MARKER]
    expect(got).toEqual({ post: null })
    const after = await addEntry(db.sql)
    expect(reached(await eventsUntil(stream, (event) => event.data.ids?.includes(after) ?? false)).post).toContain(after)
  })

  test('a write whose transaction commits after a later one is still told (the mark keeps transactions in flight)', async () => {
    const slow = await addEntry(db.sql)
    const quick = await addEntry(db.sql)
    const { stream } = await api.open('/api/v1/events?types=post')
    await stream.next()
    const slowWrite = await writeInFlight(db.url, (tx) => tx`update entry_translations set title = 'slow' where entry_id = ${slow}`)
    await db.sql`update entry_translations set title = 'quick' where entry_id = ${quick}`
    expect((await stream.nextEvent()).data).toEqual({ type: 'post', ids: [quick] })
    await slowWrite.commit()
    expect(reached(await eventsUntil(stream, (event) => event.data.ids?.includes(slow) ?? false)).post).toContain(slow)
  })
})

describe('C49 Last-Event-ID', () => {
  test('resumes from the change log: what was written while away comes first, then the live stream', async () => {
    const { stream } = await api.open('/api/v1/events?types=post')
    await stream.next()
    const before = await addEntry(db.sql)
    await eventsUntil(stream, (event) => event.data.ids?.includes(before) ?? false)
    const resumeFrom = stream.lastEventId
    await stream.cancel()
    const away = [await addEntry(db.sql), await addEntry(db.sql)]
    await db.sql`update entry_translations set title = 'changed' where entry_id = ${before}`
    const resumed = await api.open('/api/v1/events?types=post', { 'last-event-id': resumeFrom })
    expect(resumed.response.status).toBe(200)
    const caughtUp = await resumed.stream.nextEvent()
    expect(caughtUp.data).toEqual({ type: 'post', ids: [before, ...away] })
    const after = await addEntry(db.sql)
    expect(reached(await eventsUntil(resumed.stream, (event) => event.data.ids?.includes(after) ?? false)).post).toContain(after)
    await resumed.stream.cancel()
  })

  test('a client cut off between two events of one read resumes from the first: the second comes again, never lost', async () => {
    const { stream } = await api.open()
    await stream.next()
    let page = 0
    let post = 0
    await db.sql.begin(async (tx) => {
      ;[{ id: page }] = await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 hour' from content_types where slug = 'page' returning id`
      ;[{ id: post }] = await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 hour' from content_types where slug = 'post' returning id`
    })
    const first = await stream.nextEvent()
    const second = await stream.nextEvent()
    expect([first.data, second.data]).toEqual([{ type: 'page', ids: [page] }, { type: 'post', ids: [post] }])
    expect(first.id).not.toBe(second.id)
    await stream.cancel()
    const resumed = await api.open('/api/v1/events', { 'last-event-id': first.id })
    expect(reached(await eventsUntil(resumed.stream, (event) => event.data.type === 'post')).post).toEqual([post])
  })

  test('C47: every client resuming from the same id at once (after a deploy) costs one read of the log, not one each', async () => {
    const { stream } = await api.open()
    const { id } = await stream.next()
    await stream.cancel()
    await addEntry(db.sql)
    const crowd = await eventTestApp(db.url, { maxSubscribers: 50 })
    try {
      crowd.statements.length = 0
      const resumed = await Promise.all(Array.from({ length: 20 }, () => crowd.open('/api/v1/events', { 'last-event-id': id! })))
      for (const { response, stream: each } of resumed) {
        expect(response.status).toBe(200)
        expect((await each.nextEvent()).data.type).toBe('post')
      }
      // The first subscriber's own mark, and one catch-up for all twenty.
      expect(crowd.statements.filter((statement) => statement.includes('pg_snapshot_xip')).length).toBe(2)
    } finally {
      await crowd.cancelStreams()
      await crowd.close()
    }
  })

  test('a type deleted or renamed: its streams get event: reset and end, a reconnect asking for it is 404; the other streams go on', async () => {
    await addContentType(db.sql, 'doomed')
    await addContentType(db.sql, 'renamed')
    // Heard by the feed before the streams ask for the new types.
    await Bun.sleep(300)
    const doomed = await api.open('/api/v1/events?types=post,doomed')
    const renamed = await api.open('/api/v1/events?types=renamed')
    const posts = await api.open('/api/v1/events?types=post')
    const everything = await api.open('/api/v1/events')
    for (const { response, stream } of [doomed, renamed, posts, everything]) {
      expect(response.status).toBe(200)
      await stream.next()
    }
    await db.sql`delete from content_types where slug = 'doomed'`
    await db.sql`update content_types set slug = 'retitled' where slug = 'renamed'`
    for (const { stream } of [doomed, renamed]) {
      const reset = await stream.nextEvent()
      expect([reset.event, reset.data]).toEqual(['reset', {}])
      expect(await stream.ended(3000)).toBe(true)
    }
    const again = await api.get('/api/v1/events?types=post,doomed', { headers: { 'last-event-id': doomed.stream.lastEventId } })
    expect([again.status, again.body]).toEqual([404, { error: 'Content type not found.' }])
    // The others stay open and hear the next write.
    const entry = await addEntry(db.sql)
    for (const { stream } of [posts, everything]) expect(reached(await eventsUntil(stream, (event) => event.data.ids?.includes(entry) ?? false)).post).toContain(entry)
  })

  test('a position older than the retention, pruned, or not of this database gets event: reset (sync again), then the live stream', async () => {
    const [{ micros }] = await db.sql`select (extract(epoch from now() - interval '31 days') * 1000000)::int8::text as micros`
    const now = String(BigInt(Date.now()) * 1000n)
    for (const id of [encodeEventMark({ position: '0', inProgress: [], atMicros: micros }), encodeEventMark({ position: '999999999', inProgress: [], atMicros: now })]) {
      const { stream } = await api.open('/api/v1/events', { 'last-event-id': id })
      const reset = await stream.nextEvent()
      expect([reset.event, reset.data]).toEqual(['reset', {}])
      expect(reset.id).not.toBe(id)
      const live = await addEntry(db.sql)
      expect(reached(await eventsUntil(stream, (event) => event.data.ids?.includes(live) ?? false)).post).toContain(live)
      await stream.cancel()
    }
  })
})

describe('C49 bounds', () => {
  test('EVENTS_MAX_SUBSCRIBERS: one more stream is 503 with Retry-After; a place freed is taken again', async () => {
    const open = await Promise.all([1, 2, 3, 4].map(() => api.open()))
    for (const { stream } of open) await stream.next()
    const refused = await api.get('/api/v1/events')
    expect([refused.status, refused.body]).toEqual([503, { error: 'Service unavailable.' }])
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    await open[0]!.stream.cancel()
    const again = await api.open()
    expect(again.response.status).toBe(200)
    for (const { stream } of [...open.slice(1), again]) await stream.cancel()
  })

  test('a subscriber that does not read is dropped before its backlog passes the bound; the others get every event', async () => {
    const idle = await api.open()
    const reading = await api.open()
    await reading.stream.next()
    const ids: number[] = []
    // Each event is about 60 bytes: 4096 bytes of backlog hold about 70.
    for (let i = 0; i < 100; i++) {
      const id = await addEntry(db.sql)
      ids.push(id)
      await eventsUntil(reading.stream, (event) => event.data.ids?.includes(id) ?? false)
    }
    const outcome = await idle.stream.ended()
    expect(outcome).toBeInstanceOf(Error)
    expect(api.feed.subscribers).toBe(1)
    expect(api.logs.some((line) => line.includes('event subscriber dropped'))).toBe(true)
    await reading.stream.cancel()
  })

  test('C22: with the database refusing connections, a new stream is 503 with Retry-After, no stream is left open, and the service still answers', async () => {
    let feed!: EventFeed
    const refused = testApp('postgres://postgres@127.0.0.1:1/none', { DATABASE_TIMEOUT_MS: '1000' }, undefined, undefined, {
      events: (sql, log) => (feed = new EventFeed({ sql, log, timeoutMs: 1000, maxSubscribers: 10, retentionDays: 30 })),
    })
    try {
      for (const headers of [{}, { 'last-event-id': `1.${BigInt(Date.now()) * 1000n}` }] as Record<string, string>[]) {
        const response = await refused.get('/api/v1/events', { headers })
        expect([response.status, response.body]).toEqual([503, { error: 'Service unavailable.' }])
        expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
      }
      expect(feed.subscribers).toBe(0)
      expect((await refused.get('/healthz')).status).toBe(200)
    } finally {
      feed.close()
      await refused.close()
    }
  })

  test('the graceful stop ends every stream at once', async () => {
    const feed = await eventTestApp(db.url)
    const { stream } = await feed.open()
    await stream.next()
    feed.feed.close()
    expect(await stream.ended(2000)).toBe(true)
    const after = await feed.get('/api/v1/events')
    expect(after.status).toBe(503)
    await feed.close()
  })
})
