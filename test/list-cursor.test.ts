import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { encodeCursor } from '../src/content/cursor'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage, clearContent } from './support/fixtures'
import { links } from './support/links'
import { random } from './support/random'

const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
const api = testApp(db.url)
afterAll(async () => {
  await api.close()
  await db.sql.end()
})
beforeEach(() => clearContent(db.sql))

const HOUR = 3_600_000
const ago = (hours: number) => new Date(Date.now() - hours * HOUR)
const ids = (body: any) => body.data.map((item: any) => item.id)
const BASE = 'https://cms.example.com'


/** A URL of a Link header, as a path for the in-process app (its origin is PUBLIC_URL). */
function pathOf(url: string): string {
  expect(url.startsWith(`${BASE}/api/v1/content/`)).toBe(true)
  return url.slice(BASE.length)
}

/** Follows rel="next" from `path` to the end: the ids of every page, and each page's meta. */
async function walk(path: string): Promise<{ ids: number[]; metas: any[]; requests: number }> {
  const walked: number[] = []
  const metas: any[] = []
  let next: string | undefined = path
  let requests = 0
  while (next !== undefined) {
    const response = await api.get(next)
    expect(response.status).toBe(200)
    walked.push(...ids(response.body))
    metas.push(response.body.meta)
    const rel = links(response.headers).next
    next = rel === undefined ? undefined : pathOf(rel)
    if (++requests > 500) throw new Error('the walk does not end')
  }
  return { ids: walked, metas, requests }
}

/** The live entries in list order (C1, C11), from the database: the oracle. */
async function listOrder(type = 'post'): Promise<number[]> {
  const rows = await db.sql<{ id: number }[]>`
    select e.id
    from entries e
    join content_types ct on ct.id = e.content_type_id
    where ct.slug = ${type}
      and e.status = 'published'
      and (e.published_at is null or e.published_at <= now())
    order by e.published_at desc nulls last, e.id desc
  `
  return rows.map((row) => row.id)
}

describe('C39: keyset continuation (Link rel="next" with an after cursor)', () => {
  test('C39/C11: walking rel="next" from page 1 gives every live entry once, in list order, as pages by number do', async () => {
    const same = ago(3)
    for (const publishedAt of [same, null, same, ago(1), null, ago(10), same, ago(2), null, ago(5), same, ago(7)]) {
      await addEntry(db.sql, { publishedAt })
    }
    // Hidden entries between and around them: never shown, never counted, never a cursor (C1, C2).
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + HOUR) })
    await addEntry(db.sql, { status: 'draft', publishedAt: same })
    await addEntry(db.sql, { status: 'scheduled', publishedAt: null })
    const expected = await listOrder()
    expect(expected).toHaveLength(12)
    for (const perPage of [1, 2, 5, 12, 20]) {
      const walked = await walk(`/api/v1/content/post?per_page=${perPage}`)
      expect([perPage, walked.ids]).toEqual([perPage, expected])
      expect(walked.requests).toBe(Math.max(1, Math.ceil(12 / perPage)))
      // C39: meta.current_page of a cursor page is the number of the page it opens; the rest is the page's true meta.
      expect(walked.metas.map((meta) => meta.current_page)).toEqual(walked.metas.map((_, index) => index + 1))
      for (const meta of walked.metas) expect(meta).toMatchObject({ per_page: perPage, total: 12, last_page: Math.ceil(12 / perPage) })
      // The same pages by number.
      for (let page = 1; page <= Math.ceil(12 / perPage); page++) {
        const byNumber = await api.get(`/api/v1/content/post?per_page=${perPage}&page=${page}`)
        expect(ids(byNumber.body)).toEqual(expected.slice((page - 1) * perPage, page * perPage))
      }
    }
  })

  test('C39/C11: a cursor keeps publication times to the microsecond, undated entries, and the earliest times PostgreSQL holds', async () => {
    const times = ['2026-01-01 10:00:00.000001+00', '2026-01-01 10:00:00.000002+00', '2026-01-01 10:00:00+00', '1969-12-31 23:59:59.5+00', '0044-03-15 12:00:00+00 BC', '-infinity']
    for (const time of times) {
      await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', ${time}::text::timestamptz from content_types where slug = 'post'`
      await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', ${time}::text::timestamptz from content_types where slug = 'post'`
    }
    await addEntry(db.sql, { publishedAt: null })
    await addEntry(db.sql, { publishedAt: null })
    const expected = await listOrder()
    expect(expected).toHaveLength(14)
    expect((await walk('/api/v1/content/post?per_page=1')).ids).toEqual(expected)
    expect((await walk('/api/v1/content/post?per_page=3')).ids).toEqual(expected)
  })

  test('C39: Link has next (a cursor), prev (by number), first and last; URLs keep lang and per_page only', async () => {
    for (let i = 0; i < 7; i++) await addEntry(db.sql, { publishedAt: ago(i + 1) })
    const first = await api.get('/api/v1/content/post?per_page=3&lang=fr&utm_source=mail')
    const rels = links(first.headers)
    expect(Object.keys(rels).sort()).toEqual(['first', 'last', 'next'])
    expect(rels.first).toBe(`${BASE}/api/v1/content/post?lang=fr&per_page=3`)
    expect(rels.last).toBe(`${BASE}/api/v1/content/post?lang=fr&per_page=3&page=3`)
    expect(rels.next).toMatch(/^https:\/\/cms\.example\.com\/api\/v1\/content\/post\?lang=fr&per_page=3&after=[A-Za-z0-9_-]+$/)
    const second = await api.get('/api/v1/content/post?per_page=3&page=2')
    expect(links(second.headers).prev).toBe(`${BASE}/api/v1/content/post?per_page=3`)
    // The last page has no next; a page past the last points back to the last one.
    expect(links((await api.get('/api/v1/content/post?per_page=3&page=3')).headers).next).toBeUndefined()
    const past = await api.get('/api/v1/content/post?per_page=3&page=9')
    expect(links(past.headers)).toEqual({ prev: `${BASE}/api/v1/content/post?per_page=3&page=3`, first: `${BASE}/api/v1/content/post?per_page=3`, last: `${BASE}/api/v1/content/post?per_page=3&page=3` })
    // A default language, asked or unknown, is left out: every request sharing an answer shares its links.
    expect(links((await api.get('/api/v1/content/post?lang=en')).headers)).toEqual(links((await api.get('/api/v1/content/post?lang=xx')).headers))
    // A cursor page knows no page before it.
    const cursorPage = await api.get(pathOf(rels.next!))
    expect(links(cursorPage.headers).prev).toBeUndefined()
    // A 304 leaves the links to the body the client holds (C32 lists what it carries).
    const plain = await api.get('/api/v1/content/post?per_page=3')
    const revalidated = await api.get('/api/v1/content/post?per_page=3', { headers: { 'if-none-match': plain.headers.get('etag') ?? '' } })
    expect(revalidated.status).toBe(304)
    expect(revalidated.headers.get('link')).toBeNull()
    // HEAD carries it too; a 404 has none.
    expect((await api.get('/api/v1/content/post', { method: 'HEAD' })).headers.get('link')).toBe((await api.get('/api/v1/content/post')).headers.get('link'))
    expect((await api.get('/api/v1/content/nope')).headers.get('link')).toBeNull()
  })

  test('C39/C2: a cursor names a place, not an entry: it survives its entry going away, and hidden entries are never a next', async () => {
    const entries = []
    for (let i = 0; i < 6; i++) entries.push(await addEntry(db.sql, { publishedAt: ago(i + 1) }))
    const page1 = await api.get('/api/v1/content/post?per_page=2')
    const next = pathOf(links(page1.headers).next!)
    // The last entry of page 1 is unpublished, and a new entry is published before it.
    await db.sql`update entries set status = 'draft' where id = ${entries[1]!}`
    await addEntry(db.sql, { publishedAt: ago(0.5) })
    expect(ids((await api.get(next)).body)).toEqual([entries[2], entries[3]])
    // Only hidden entries follow the last live one: no next.
    await clearContent(db.sql)
    const live = await addEntry(db.sql, { publishedAt: ago(1) })
    await addEntry(db.sql, { publishedAt: ago(2), status: 'draft' })
    await addEntry(db.sql, { publishedAt: null, status: 'scheduled' })
    const only = await api.get('/api/v1/content/post?per_page=1')
    expect(ids(only.body)).toEqual([live])
    expect(links(only.headers).next).toBeUndefined()
    // A cursor made up to point into hidden entries shows live entries only.
    const hiddenPlace = encodeCursor(2, String((Date.now() - 2 * HOUR) / 1000), 999_999)
    expect((await api.get(`/api/v1/content/post?after=${hiddenPlace}`)).body.data).toEqual([])
    // A place in the future comes before every live entry: the walk starts at the top.
    const futurePlace = encodeCursor(2, String(Date.now() / 1000 + 365 * 86_400), 1)
    expect(ids((await api.get(`/api/v1/content/post?after=${futurePlace}`)).body)).toEqual([live])
  })

  test('C39: a bad cursor, or after with page, is a 400 with a clear message, and asks nothing of the database', async () => {
    await addEntry(db.sql)
    const valid = pathOf(links((await api.get('/api/v1/content/post?per_page=1')).headers).first!)
    expect(valid).toBe('/api/v1/content/post?per_page=1')
    const bad = [
      '',
      'abc',
      '!!!',
      Buffer.from('[1,null]').toString('base64url'),
      Buffer.from('[0,null,1]').toString('base64url'),
      Buffer.from('[1,null,0]').toString('base64url'),
      Buffer.from('[1,"12.5",1]').toString('base64url'),
      Buffer.from('[1,"99999999999999999999",1]').toString('base64url'),
      Buffer.from('[1.5,null,1]').toString('base64url'),
      Buffer.from('{"page":1}').toString('base64url'),
      Buffer.from('[9007199254740992,null,1]').toString('base64url'),
      'a'.repeat(5000),
    ]
    api.statements.length = 0
    for (const after of bad) {
      const response = await api.get(`/api/v1/content/post?after=${encodeURIComponent(after)}`)
      expect([after, response.status, response.body]).toEqual([after, 400, { error: 'The after parameter is not a valid cursor.' }])
    }
    const both = await api.get(`/api/v1/content/post?page=2&after=${encodeCursor(2, null, 5)}`)
    expect([both.status, both.body]).toEqual([400, { error: 'The page and after parameters cannot be used together.' }])
    expect(api.statements).toEqual([])
  })

  test('C39/C11/C18: random sites walked by cursor and by page number agree with the database', async () => {
    const rng = random(39)
    for (let round = 0; round < 4; round++) {
      await clearContent(db.sql)
      const count = 5 + Math.floor(rng.next() * 40)
      const shared = [ago(1), ago(2), ago(3)]
      for (let i = 0; i < count; i++) {
        const kind = rng.next()
        const publishedAt = kind < 0.15 ? null : kind < 0.45 ? rng.pick(shared) : kind < 0.55 ? new Date(Date.now() + HOUR) : ago(rng.next() * 100)
        await addEntry(db.sql, { publishedAt, status: rng.next() < 0.15 ? rng.pick(['draft', 'scheduled'] as const) : 'published', type: rng.next() < 0.2 ? 'page' : 'post' })
      }
      const expected = await listOrder()
      const perPage = 1 + Math.floor(rng.next() * 7)
      const walked = await walk(`/api/v1/content/post?per_page=${perPage}`)
      expect([round, walked.ids]).toEqual([round, expected])
      expect(walked.metas.every((meta) => meta.total === expected.length)).toBe(true)
      const byNumber: number[] = []
      for (let page = 1; page <= Math.max(1, Math.ceil(expected.length / perPage)); page++) {
        byNumber.push(...ids((await api.get(`/api/v1/content/post?per_page=${perPage}&page=${page}`)).body))
      }
      expect([round, byNumber]).toEqual([round, expected])
    }
  })
})
