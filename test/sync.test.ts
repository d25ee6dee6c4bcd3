import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { t } from 'elysia'
import { CONTENT_ITEM_HOOK } from '../src/hooks/extension'
import { FilterRegistry } from '../src/hooks/registry'
import { ConfigError, loadConfig } from '../src/config'
import { testApp, type TestApp } from './support/app'
import { cachedTestApp, type CachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { writeInFlight } from './support/writer-in-flight'
import { addAuthor, addContentType, addEntry, addImage, addLanguage, addTerm, clearContent, setDefaultLanguage, writeUnheard } from './support/fixtures'
import { random } from './support/random'
import { databaseClockPassed, databaseTime, stillBefore } from './support/database-clock'

/**
 * C48: `GET /api/v1/sync/{type}`. A copy kept by an initial sync and deltas
 * always equals a fresh sync, whatever was written in between and by whom;
 * tokens survive restarts; malformed, foreign and expired tokens are refused.
 */
const db = await createTestDatabase()
// The chain reads what only the model shows (body, field values, alt, taxonomy, type name): their changes must reach the copy too.
const filters = new FilterRegistry()
filters.add(
  CONTENT_ITEM_HOOK,
  (data, content) => ({
    ...data,
    extra: [content.content_type.name, content.featuredImage?.alt ?? null, content.translations.map((t) => t.body), content.fieldValues.map((f) => [f.key, f.value]), content.terms.map((t) => t.taxonomy.name)],
  }),
  { schema: { add: { extra: t.Unknown() } } },
  'test/sync.test.ts',
)
let plain = testApp(db.url)
let chained = testApp(db.url, {}, filters)
afterAll(async () => {
  await plain.close()
  await chained.close()
  await db.sql.end()
})
beforeEach(async () => {
  await clearContent(db.sql)
  await db.sql`delete from custom_fields`
})

type Copy = Map<number, string>

/** Follows a sync from `path` to its last page, applying each page to `copy`; the URL to ask next. */
async function follow(api: TestApp, path: string, copy: Copy = new Map()): Promise<{ copy: Copy; next: string; pages: any[] }> {
  const pages: any[] = []
  let url: string | null = path
  for (;;) {
    const response = await api.get(url!)
    expect(response.status).toBe(200)
    const body = response.body
    pages.push(body)
    expect(Object.keys(body)).toEqual(['data', 'deleted', 'meta'])
    expect(Object.keys(body.meta)).toEqual(['next_page_url', 'next_sync_url'])
    expect((body.meta.next_page_url === null) !== (body.meta.next_sync_url === null)).toBe(true)
    const ids = [...body.data.map((item: any) => item.id), ...body.deleted]
    expect(new Set(ids).size).toBe(ids.length)
    for (const item of body.data) copy.set(item.id, JSON.stringify(item))
    for (const id of body.deleted) copy.delete(id)
    if (body.meta.next_sync_url) return { copy, next: relative(body.meta.next_sync_url), pages }
    url = relative(body.meta.next_page_url)
  }
}

const relative = (url: string) => url.replace('https://cms.example.com', '')
const sorted = (copy: Copy) => [...copy.entries()].sort(([a], [b]) => a - b)

describe('C48 SYNC_RETENTION_DAYS', () => {
  test('30 days by default; a whole number of days from 1 to 3650, or the start stops naming it', () => {
    expect(loadConfig({}).syncRetentionDays).toBe(30)
    expect(loadConfig({ SYNC_RETENTION_DAYS: '7' }).syncRetentionDays).toBe(7)
    for (const value of ['0', '3651', '1.5', 'a week']) {
      expect(() => loadConfig({ SYNC_RETENTION_DAYS: value })).toThrow(new ConfigError(`SYNC_RETENTION_DAYS must be a whole number from 1 to 3650, not "${value}".`))
    }
  })

  test('a token older than the setting is 410 even when the log still holds its rows', async () => {
    await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    const strict = testApp(db.url, { SYNC_RETENTION_DAYS: '1' })
    try {
      const token = new URL(`http://x${next}`).searchParams.get('token')!
      const decoded = JSON.parse(Buffer.from(token, 'base64url').toString())
      decoded[3][3] = new Date(Date.now() - 2 * 86_400_000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
      const path = `/api/v1/sync/post?lang=en&token=${Buffer.from(JSON.stringify(decoded)).toString('base64url')}`
      expect((await strict.get(path)).status).toBe(410)
      expect((await plain.get(path)).status).toBe(200)
    } finally {
      await strict.close()
    }
  })
})

describe('C48 sync pages', () => {
  test('an initial sync holds every live entry of the type, as lists show them, by id, in pages of per_page', async () => {
    const ids = []
    for (let i = 0; i < 5; i++) ids.push(await addEntry(db.sql, { type: 'post' }))
    await addEntry(db.sql, { type: 'post', status: 'draft' })
    await addEntry(db.sql, { type: 'post', publishedAt: new Date(Date.now() + 86_400_000) })
    await addEntry(db.sql, { type: 'page' })
    const { copy, pages } = await follow(plain, '/api/v1/sync/post?per_page=2')
    expect(pages.length).toBe(3)
    expect([...copy.keys()].sort((a, b) => a - b)).toEqual(ids)
    const list = await plain.get('/api/v1/content/post')
    for (const item of list.body.data) expect(copy.get(item.id)).toBe(JSON.stringify(item))
    expect(pages[0].meta.next_page_url).toContain('per_page=2')
  })

  test('per_page: 100 by default, clamped to 1000, a positive integer or 400 as C6', async () => {
    for (let i = 0; i < 3; i++) await addEntry(db.sql)
    expect((await plain.get('/api/v1/sync/post?per_page=5000')).status).toBe(200)
    const bad = await plain.get('/api/v1/sync/post?per_page=0')
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: 'The per_page parameter must be a positive integer.' })
  })

  test('an unknown type is 404 as C5; other methods are 405', async () => {
    expect((await plain.get('/api/v1/sync/nope')).body).toEqual({ error: 'Content type not found.' })
    const post = await plain.get('/api/v1/sync/post', { method: 'POST' })
    expect(post.status).toBe(405)
  })

  test('a delta after n changes holds exactly those n entries, and deletions of entries once live only (C2)', async () => {
    const ids = []
    for (let i = 0; i < 30; i++) ids.push(await addEntry(db.sql))
    const draft = await addEntry(db.sql, { status: 'draft' })
    const embargoed = await addEntry(db.sql, { publishedAt: new Date(Date.now() + 86_400_000) })
    const { next } = await follow(plain, '/api/v1/sync/post')
    const changed = ids.slice(0, 10)
    await db.sql`update entry_translations set title = 'changed' where entry_id in ${db.sql(changed)}`
    await db.sql`delete from entries where id in ${db.sql([ids[20]!, draft, embargoed])}`
    const delta = await plain.get(next)
    expect(delta.body.data.map((item: any) => item.id)).toEqual(changed)
    expect(delta.body.deleted).toEqual([ids[20]])
    const again = await plain.get(relative(delta.body.meta.next_sync_url))
    expect(again.body).toEqual({ data: [], deleted: [], meta: { next_page_url: null, next_sync_url: again.body.meta.next_sync_url } })
  })
})

describe('C48 each kind of write reaches exactly the entries that show it', () => {
  /** Three live posts: one with the author, image, term and field value below; one without; one page with them. */
  async function scene() {
    const author = await addAuthor(db.sql, 'Ada')
    const image = await addImage(db.sql, 'a.jpg', { thumbnail: 'a-t.jpg' }, 'A cat')
    const term = await addTerm(db.sql, 'tag', 'Bun')
    const [{ id: field }] = await db.sql`insert into custom_fields (content_type_id, key) select id, 'rating' from content_types where slug = 'post' returning id`
    const shown = await addEntry(db.sql, { authorId: author, imageId: image, termIds: [term], translations: { en: { title: 'Shown', body: 'b' } } })
    const other = await addEntry(db.sql)
    await addEntry(db.sql, { type: 'page', authorId: author, imageId: image, termIds: [term] })
    await db.sql`insert into field_values (entry_id, custom_field_id, value) values (${shown}, ${field}, '1')`
    const [{ id: typeId }] = await db.sql`select id from content_types where slug = 'post'`
    return { author, image, term, field, shown, other, typeId }
  }

  const cases: [string, (s: Awaited<ReturnType<typeof scene>>) => Promise<unknown>, 'shown' | 'all'][] = [
    ['an author renamed', (s) => db.sql`update authors set name = 'Grace' where id = ${s.author}`, 'shown'],
    ['an image moved', (s) => db.sql`update media set path = 'b.jpg' where id = ${s.image}`, 'shown'],
    ['an image\'s alt text (the model shows it)', (s) => db.sql`update media set alt = 'A dog' where id = ${s.image}`, 'shown'],
    ['a variant added', (s) => db.sql`insert into media_variants (media_id, name, path) values (${s.image}, 'medium', 'a-m.jpg')`, 'shown'],
    ['a variant removed', (s) => db.sql`delete from media_variants where media_id = ${s.image}`, 'shown'],
    ['a term renamed', (s) => db.sql`update terms set name = 'Deno' where id = ${s.term}`, 'shown'],
    ['a taxonomy renamed (the model shows it)', () => db.sql`update taxonomies set name = 'Tags' where slug = 'tag'`, 'shown'],
    ['an entry term moved', (s) => db.sql`update entry_terms set position = 3 where entry_id = ${s.shown}`, 'shown'],
    ['a field value changed', (s) => db.sql`update field_values set value = '2' where entry_id = ${s.shown}`, 'shown'],
    ['a translation body changed', (s) => db.sql`update entry_translations set body = 'c' where entry_id = ${s.shown}`, 'shown'],
    ['a custom field renamed', (s) => db.sql`update custom_fields set key = 'stars' where id = ${s.field}`, 'all'],
    ['the type renamed', (s) => db.sql`update content_types set name = 'Posts' where id = ${s.typeId}`, 'all'],
    [
      'the default language changed',
      async () => {
        await addLanguage(db.sql, 'fr')
        await setDefaultLanguage(db.sql, 'fr')
      },
      'all',
    ],
  ]
  for (const [name, write, reach] of cases) {
    test(name, async () => {
      const s = await scene()
      const { next } = await follow(chained, '/api/v1/sync/post?lang=en')
      await write(s)
      const delta = await chained.get(next)
      const expected = reach === 'shown' ? [s.shown] : [s.shown, s.other]
      expect(delta.body.data.map((item: any) => item.id)).toEqual(expected)
      const fresh = await follow(chained, '/api/v1/sync/post?lang=en')
      for (const item of delta.body.data) expect(JSON.stringify(item)).toBe(fresh.copy.get(item.id)!)
      await setDefaultLanguage(db.sql, 'en')
    })
  }

  // The go-lives below are taken from the database's clock (C1), 2 s ahead: the writes before them take a
  // few hundred ms on a loaded machine, and a go-live that passed first would make another, right, answer.
  test('C2: an embargoed entry withdrawn or postponed before its time never shows in deleted, even asked after that time', async () => {
    const goLive = await databaseTime(db.sql, 2000)
    const withdrawn = await addEntry(db.sql, { publishedAt: goLive })
    const postponed = await addEntry(db.sql, { publishedAt: goLive })
    const live = await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    await db.sql`update entries set status = 'draft' where id = ${withdrawn}`
    await db.sql`update entries set published_at = now() + interval '1 day' where id = ${postponed}`
    await db.sql`update entries set status = 'draft' where id = ${live}`
    expect(await stillBefore(db.sql, goLive), 'the writes took the whole 2 s before the go-live: too slow a machine to judge').toBe(true)
    await databaseClockPassed(db.sql, goLive)
    const delta = await plain.get(next)
    expect([delta.body.data, delta.body.deleted]).toEqual([[], [live]])
  })

  test('a go-live: an embargoed entry whose time comes is in the next delta, with no write', async () => {
    const goLive = await databaseTime(db.sql, 2000)
    const soon = await addEntry(db.sql, { publishedAt: goLive })
    const { next, copy } = await follow(plain, '/api/v1/sync/post')
    expect(await stillBefore(db.sql, goLive), 'the first sync took the whole 2 s before the go-live: too slow a machine to judge').toBe(true)
    expect(copy.has(soon)).toBe(false)
    await databaseClockPassed(db.sql, goLive)
    const delta = await plain.get(next)
    expect(delta.body.data.map((item: any) => item.id)).toEqual([soon])
  })

  test('TRUNCATE entries: every entry once live is deleted', async () => {
    const ids = [await addEntry(db.sql), await addEntry(db.sql)]
    await addEntry(db.sql, { status: 'draft' })
    const { next } = await follow(plain, '/api/v1/sync/post')
    await db.sql`truncate entries cascade`
    expect((await plain.get(next)).body.deleted).toEqual(ids)
  })

  test('COPY into entries and entry_translations is logged like any insert', async () => {
    const { next } = await follow(plain, '/api/v1/sync/post')
    const [{ id: typeId }] = await db.sql`select id from content_types where slug = 'post'`
    const writer = await db.sql`copy entries (id, content_type_id, status, published_at) from stdin`.writable()
    writer.write(`900001\t${typeId}\tpublished\t2026-01-01 00:00:00+00\n`)
    writer.end()
    await new Promise((resolve) => writer.on('finish', resolve))
    expect((await plain.get(next)).body.data.map((item: any) => item.id)).toEqual([900001])
  })
})

describe('C48 writers in flight', () => {
  test('a write whose transaction commits after a sync that took a later position is in the next delta', async () => {
    const slow = await addEntry(db.sql)
    const quick = await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    // Takes its position first, commits last.
    const slowWrite = await writeInFlight(db.url, (tx) => tx`update entry_translations set title = 'slow' where entry_id = ${slow}`)
    await db.sql`update entry_translations set title = 'quick' where entry_id = ${quick}`
    const between = await plain.get(next)
    expect(between.body.data.map((item: any) => item.title)).toEqual(['quick'])
    await slowWrite.commit()
    const after = await plain.get(relative(between.body.meta.next_sync_url))
    expect(after.body.data.map((item: any) => item.title)).toEqual(['slow'])
  })
})

/** The same sync URL with its token's mark set to `at`: a forged token. */
function withMarkAt(token: string, at: string): string {
  const decoded = JSON.parse(Buffer.from(token, 'base64url').toString())
  decoded[3][3] = at
  return `/api/v1/sync/post?lang=en&token=${Buffer.from(JSON.stringify(decoded)).toString('base64url')}`
}

describe('C48 sync tokens', () => {
  test('a malformed token, or one of another type or language, is 400 with the rule\'s message', async () => {
    await addLanguage(db.sql, 'fr')
    await addEntry(db.sql, { type: 'post' })
    await addEntry(db.sql, { type: 'page' })
    const { next } = await follow(plain, '/api/v1/sync/post')
    const token = new URL(`http://x${next}`).searchParams.get('token')!
    const invalid = { error: 'The token parameter is not a valid sync token.' }
    for (const path of [
      '/api/v1/sync/post?token=nope!',
      '/api/v1/sync/post?token=',
      `/api/v1/sync/post?token=${Buffer.from('[1,2,3]').toString('base64url')}`,
      `/api/v1/sync/post?token=${token.slice(0, -3)}`,
      `/api/v1/sync/page?token=${token}`,
      `/api/v1/sync/post?lang=fr&token=${token}`,
      // A mark on a day that does not exist (Date.parse takes it; PostgreSQL would not: a 500), and one in the future.
      withMarkAt(token, '2027-02-30T00:00:00.000000Z'),
      withMarkAt(token, '2999-01-01T00:00:00.000000Z'),
    ]) {
      const response = await plain.get(path)
      expect({ path, status: response.status, body: response.body }).toEqual({ path, status: 400, body: invalid })
    }
  })

  test('a token older than SYNC_RETENTION_DAYS, or older than the log kept, is 410 with the rule\'s message', async () => {
    await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    const expired = { error: 'The sync token has expired: start a new sync.' }
    const token = new URL(`http://x${next}`).searchParams.get('token')!
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString())
    decoded[3][3] = new Date(Date.now() - 31 * 86_400_000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
    const old = await plain.get(`/api/v1/sync/post?lang=en&token=${Buffer.from(JSON.stringify(decoded)).toString('base64url')}`)
    expect([old.status, old.body]).toEqual([410, expired])
    expect((await plain.get(next)).status).toBe(200)
    // After writes made with the triggers disabled, the owner expires every token (sql/change-log.md).
    await db.sql`select vitrine_expire_sync_tokens()`
    const pruned = await plain.get(next)
    expect([pruned.status, pruned.body]).toEqual([410, expired])
  })

  test('the log is pruned past the retention by a writer, and tokens made before the cut expire', async () => {
    await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    await db.sql`update change_log set changed_at = changed_at - interval '40 days'`
    await db.sql`update change_log_state set pruned_at = '-infinity', retention = '1 second'`
    await new Promise((resolve) => setTimeout(resolve, 1100))
    await addEntry(db.sql)
    expect((await db.sql`select count(*)::int as n from change_log where changed_at < now() - interval '1 day'`)[0].n).toBe(0)
    expect((await plain.get(next)).status).toBe(410)
    await db.sql`update change_log_state set retention = '30 days'`
  })

  test('writes made with the triggers disabled: the drift the count check finds expires the type\'s tokens until repaired', async () => {
    await addEntry(db.sql)
    const checked = testApp(db.url, {}, undefined, undefined, { liveCountCheck: true })
    try {
      const { next } = await follow(checked, '/api/v1/sync/post')
      await writeUnheard(db.sql, (tx) => tx`delete from entries`)
      await checked.liveCounts!.check()
      expect((await checked.get(next)).status).toBe(410)
      expect((await checked.get('/api/v1/sync/post')).status).toBe(200)
      await db.sql`select vitrine_repair_live_entry_counts()`
      await db.sql`select vitrine_expire_sync_tokens()`
      await checked.liveCounts!.check()
      expect((await checked.get(next)).status).toBe(410)
    } finally {
      await checked.close()
    }
  })

  test('a token survives a restart and works on another instance', async () => {
    const first = await addEntry(db.sql)
    const { next } = await follow(plain, '/api/v1/sync/post')
    await plain.close()
    await db.sql`update entry_translations set title = 'after the restart' where entry_id = ${first}`
    plain = testApp(db.url)
    const other = testApp(db.url)
    try {
      for (const api of [plain, other]) {
        const delta = await api.get(next)
        expect(delta.status).toBe(200)
        expect(delta.body.data.map((item: any) => item.title)).toEqual(['after the restart'])
      }
    } finally {
      await other.close()
    }
  })
})

describe('C48 property: a copy kept by sync equals a fresh sync', () => {
  const TYPES = ['post', 'page']
  const STATUSES = ['draft', 'published', 'published', 'published']

  /** Trusted SQL text: the test's own. Every kind of write a writer of the data model can make. */
  function randomWrite(rng: ReturnType<typeof random>): string | string[] {
    const type = `(select id from content_types where slug = '${rng.pick(TYPES)}')`
    const entry = `(select id from entries order by random() limit 1)`
    const some = `(select id from entries order by random() limit ${1 + Math.floor(rng.next() * 3)})`
    const time = rng.pick(['now() - interval \'2 hours\'', 'null', "now() + interval '300 milliseconds'", "now() + interval '5 days'"])
    const text = `'w${Math.floor(rng.next() * 1e6)}'`
    return rng.pick([
      `insert into entries (content_type_id, status, published_at, author_id, featured_image_id) values (${type}, '${rng.pick(STATUSES)}', ${time}, (select id from authors order by random() limit 1), (select id from media order by random() limit 1))`,
      `update entries set status = '${rng.pick(STATUSES)}' where id in ${some}`,
      `update entries set published_at = ${time} where id in ${some}`,
      `update entries set content_type_id = ${type} where id in ${some}`,
      `update entries set author_id = (select id from authors order by random() limit 1) where id in ${some}`,
      `update entries set featured_image_id = (select id from media order by random() limit 1) where id in ${some}`,
      `delete from entries where id in ${some}`,
      `insert into entry_translations (entry_id, language_code, title, slug, body) select ${entry}, '${rng.pick(['en', 'fr'])}', ${text}, ${text}, ${text} on conflict do nothing`,
      `update entry_translations set title = ${text}, body = ${text} where entry_id in ${some}`,
      `delete from entry_translations where entry_id in ${some} and language_code = '${rng.pick(['en', 'fr'])}'`,
      `insert into entry_terms (entry_id, term_id, position) select ${entry}, (select id from terms order by random() limit 1), 1 on conflict do nothing`,
      `delete from entry_terms where entry_id in ${some}`,
      `update entry_terms set position = position + 1 where entry_id in ${some}`,
      `update terms set name = ${text} where id = (select id from terms order by random() limit 1)`,
      `update taxonomies set name = ${text} where id = (select id from taxonomies order by random() limit 1)`,
      `insert into terms (taxonomy_id, name, slug) select id, ${text}, ${text} from taxonomies limit 1`,
      `delete from terms where id = (select id from terms order by random() limit 1)`,
      `update authors set name = ${text} where id = (select id from authors order by random() limit 1)`,
      `insert into authors (name) values (${text})`,
      `delete from authors where id = (select id from authors order by random() limit 1)`,
      `update media set path = ${text}, alt = ${text} where id = (select id from media order by random() limit 1)`,
      `insert into media (path) values (${text})`,
      `insert into media_variants (media_id, name, path) select id, '${rng.pick(['thumbnail', 'medium'])}', ${text} from media order by random() limit 1 on conflict do nothing`,
      `delete from media_variants where media_id = (select id from media order by random() limit 1)`,
      `delete from media where id = (select id from media order by random() limit 1)`,
      `insert into field_values (entry_id, custom_field_id, value) select ${entry}, (select id from custom_fields order by random() limit 1), to_jsonb(${text}::text) where exists (select 1 from custom_fields)`,
      `update field_values set value = to_jsonb(${text}::text) where entry_id in ${some}`,
      `delete from field_values where entry_id in ${some}`,
      `update custom_fields set key = ${text} where id = (select id from custom_fields order by random() limit 1)`,
      `update content_types set name = ${text} where slug = '${rng.pick(TYPES)}'`,
      // One default language at every moment: off, then on, in one transaction.
      ['update languages set is_default = false', `update languages set is_default = true where code = '${rng.pick(['en', 'fr'])}'`],
      rng.next() < 0.3 ? 'truncate entries cascade' : rng.next() < 0.5 ? 'truncate entry_terms' : 'truncate media_variants',
    ])
  }

  async function seed(): Promise<void> {
    await addLanguage(db.sql, 'fr')
    for (const type of TYPES) await addContentType(db.sql, type)
    const authors = [await addAuthor(db.sql, 'Ada'), await addAuthor(db.sql, 'Grace')]
    const images = [await addImage(db.sql, 'a.jpg', { thumbnail: 'a-t.jpg' }, 'A'), await addImage(db.sql, 'b.jpg')]
    const terms = [await addTerm(db.sql, 'tag', 'Bun'), await addTerm(db.sql, 'category', 'News')]
    await db.sql`insert into custom_fields (content_type_id, key) select id, 'rating' from content_types where slug in ('post', 'page')`
    for (let i = 0; i < 12; i++) {
      const id = await addEntry(db.sql, { type: TYPES[i % 2], authorId: authors[i % 2], imageId: images[i % 3] ?? null, termIds: terms.slice(0, i % 3) })
      await db.sql`insert into field_values (entry_id, custom_field_id, value) select ${id}, id, '1'::jsonb from custom_fields limit 1`
    }
  }

  let cached: CachedTestApp | undefined
  afterAll(() => cached?.close())
  /** Once the cache's listener has heard every write committed so far (notifications come in commit order): C36. */
  async function settled(): Promise<void> {
    if (!cached) return
    const barrier = cached.nextChange('test_barrier')
    await db.sql`select pg_notify('vitrine_changes', 'test_barrier:*')`
    await barrier
  }

  const apis = [
    ['without callbacks', () => plain],
    ['with a callback that reads the model', () => chained],
    ['with the cache on (C35, C36: sync pages are kept and dropped like lists)', () => cached!],
  ] as const
  for (const [name, api] of apis) {
    test(`random writes of every kind, go-lives and truncates between syncs (${name})`, async () => {
      if (name.includes('cache')) cached ??= await cachedTestApp(db.url, {}, filters)
      await seed()
      const rng = random(name.length * 7919)
      const kept: Record<string, { copy: Copy; next: string }> = {}
      for (const type of TYPES) {
        for (const lang of ['en', 'fr']) kept[`${type}:${lang}`] = await follow(api(), `/api/v1/sync/${type}?lang=${lang}&per_page=3`)
      }
      for (let round = 0; round < 14; round++) {
        for (let i = 0; i < 4; i++) {
          const statements = [randomWrite(rng)].flat()
          // A write that breaks a constraint changes nothing.
          await db.sql.begin(async (tx) => {
            for (const statement of statements) await tx.unsafe(statement)
          }).catch(() => {})
        }
        if (round % 4 === 3) await Bun.sleep(350) // embargoed entries of the near future go live, with no write
        await settled()
        for (const type of TYPES) {
          for (const lang of ['en', 'fr']) {
            const key = `${type}:${lang}`
            const delta = await follow(api(), kept[key]!.next, kept[key]!.copy)
            const fresh = await follow(api(), `/api/v1/sync/${type}?lang=${lang}&per_page=4`)
            expect({ round, key, copy: sorted(delta.copy) }).toEqual({ round, key, copy: sorted(fresh.copy) })
            kept[key] = delta
          }
        }
      }
      await setDefaultLanguage(db.sql, 'en')
    }, 60_000)
  }
})
