import { afterAll, describe, expect, test } from 'bun:test'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { eventTestApp } from './support/event-stream'
import { startPublisher } from './support/publisher'

/**
 * C56: content fed to the service's database by PostgreSQL logical
 * replication, from a real publisher (test/support/publisher.ts: a second
 * cluster with wal_level=logical holding the data model alone, as a CMS's own
 * database would), set up with the commands of docs/logical-replication.md.
 * The apply worker fires no statement trigger; every write is heard all the
 * same: the cache, the kept structures, sync and events.
 */
const db = await createTestDatabase()
const publisher = await startPublisher()
const cms = publisher.cms
const opened: { close(): Promise<void> }[] = []
// Registered before anything can fail: a failed copy must not leave the publisher running.
afterAll(async () => {
  for (const app of opened) await app.close()
  await publisher.stop(db.sql)
  await db.sql.end()
})

// Content written before the subscription: the initial copy brings it (translations may arrive before their entries).
await cms`insert into authors (name) values ('Ada'), ('Grace')`
await cms`insert into taxonomies (slug, name) values ('tag', 'Tag')`
await cms`insert into terms (taxonomy_id, name, slug) select id, 'News', 'news' from taxonomies`
await cms`insert into media (path) values ('uploads/cat.jpg')`
await cms`
  insert into entries (content_type_id, status, published_at, author_id, featured_image_id)
  select (select id from content_types where slug = 'post'), case when g % 4 = 0 then 'draft' else 'published' end, now() - interval '1 hour' * g, 1, 1
  from generate_series(1, 12) g
`
await cms`insert into entry_translations (entry_id, language_code, title, slug, body) select id, 'en', 'Alpha ' || id, 'entry-' || id, 'body of entry ' || id from entries`
await cms`insert into entry_terms (entry_id, term_id) select id, 1 from entries where id % 2 = 0`
await publisher.subscribe(db.sql)

const api = await cachedTestApp(db.url)
const uncached = testApp(db.url)
opened.push(api, uncached)

/** Written on the publisher; resolves once the subscriber has applied it. */
const applied = (write: () => Promise<unknown>) => publisher.applied(db.sql, write)

const keptDrift = async () => [...(await db.sql<{ structure: string; drifted: number }[]>`select structure, drifted::int from vitrine_kept_drift() where drifted > 0 order by structure`)]

describe('C56: writes that arrive by logical replication', () => {
  test('the initial copy (tables copied in any order) keeps every structure: the lists, totals, terms and search answer as the base tables say', async () => {
    expect(await keptDrift()).toEqual([])
    const list = await api.get('/api/v1/content/post?per_page=100')
    expect(list.body.meta.total).toBe(9)
    expect((await api.get('/api/v1/content/post?term=tag:news')).body.meta.total).toBe(3)
    expect((await api.get('/api/v1/content/post?author=1')).body.meta.total).toBe(9)
    expect((await api.get('/api/v1/content/post?search=alpha%20')).body.meta.total).toBe(9)
    expect((await api.get('/api/v1/taxonomies/tag/terms')).body.data.map((term: any) => [term.slug, term.total])).toEqual([['news', 3]])
  })

  const cases: [string, string, string, (body: any) => unknown][] = [
    ['a title changed', 'entry_translations', `update entry_translations set title = 'Changed' where entry_id = 1`, (body) => body.data.find((item: any) => item.id === 1)?.title],
    ['an entry unpublished', 'entries', `update entries set status = 'draft' where id = 1`, (body) => body.meta.total],
    ['an entry published', 'entries', `update entries set status = 'published' where id = 4`, (body) => body.meta.total],
    ['an entry embargoed', 'entries', `update entries set published_at = now() + interval '1 day' where id = 2`, (body) => body.meta.total],
    ['an entry inserted with its translation', 'entry_translations', `with made as (insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 minute' from content_types where slug = 'post' returning id) insert into entry_translations (entry_id, language_code, title, slug) select id, 'en', 'Alpha new', 'new' from made`, (body) => body.meta.total],
    ['an entry deleted (its rows cascade on the publisher)', 'entries', `delete from entries where id = 3`, (body) => body.meta.total],
    ['an author renamed', 'authors', `update authors set name = 'Renamed' where id = 1`, (body) => body.data.find((item: any) => item.id === 5).author.name],
    ['a term renamed', 'terms', `update terms set name = 'Renamed' where slug = 'news'`, (body) => body.data.find((item: any) => item.id === 6).terms[0].name],
    ['a term taken off an entry', 'entry_terms', `delete from entry_terms where entry_id = 6`, (body) => body.data.find((item: any) => item.id === 6).terms.length],
    ['an image moved', 'media', `update media set path = 'uploads/moved.jpg'`, (body) => body.data.find((item: any) => item.id === 5).featured_image.url],
    ['an image variant generated', 'media_variants', `insert into media_variants (media_id, name, path) values (1, 'thumbnail', 'uploads/thumb.jpg')`, (body) => body.data.find((item: any) => item.id === 5).featured_image.thumbnail],
    ['TRUNCATE', 'entries', 'truncate entries cascade', (body) => body.meta.total],
  ]
  for (const [what, table, write, observe] of cases) {
    test(`${what} (${table}): heard, the cached list dropped, every kept structure exact, a one-word search right`, async () => {
      const LIST = '/api/v1/content/post?per_page=100'
      await api.get(LIST)
      const before = await api.get(LIST)
      expect(before.headers.get('x-cache')).toBe('HIT')
      const notified = api.nextChange(table)
      // Trusted text: the test's own statements.
      await applied(() => cms.unsafe(write))
      await notified
      const after = await api.get(LIST)
      expect(after.headers.get('x-cache')).toBe('MISS')
      expect(observe(after.body)).not.toEqual(observe(before.body))
      expect(after.text).toBe((await uncached.get(LIST)).text)
      expect(await keptDrift()).toEqual([])
      const searched = await uncached.get('/api/v1/content/post?per_page=100&order=date&search=alpha%20')
      const [{ live }] = await db.sql<{ live: number }[]>`
        select count(*)::int as live
        from entries e
        join entry_translations t on t.entry_id = e.id and t.language_code = 'en'
        where e.status = 'published' and (e.published_at is null or e.published_at <= now()) and t.title ilike 'alpha%'
      `
      expect(searched.body.meta.total).toBe(live)
    })
  }
})

describe('C48, C49: sync and events of replicated writes', () => {
  test('a sync copy brought up to date by its delta equals a fresh sync; an event names the entry', async () => {
    await applied(async () => {
      await cms`insert into entries (id, content_type_id, status, published_at) select 100 + g, (select id from content_types where slug = 'post'), 'published', now() - interval '1 day' from generate_series(1, 3) g`
      await cms`insert into entry_translations (entry_id, language_code, title, slug) select id, 'en', 'Synced ' || id, 'synced-' || id from entries where id > 100`
    })
    const copy = new Map<number, string>()
    const follow = async (path: string): Promise<string> => {
      let url = path
      for (;;) {
        const { body } = await uncached.get(url)
        for (const item of body.data) copy.set(item.id, JSON.stringify(item))
        for (const id of body.deleted) copy.delete(id)
        if (body.meta.next_sync_url) return body.meta.next_sync_url.replace(uncached.config.publicUrl, '')
        url = body.meta.next_page_url.replace(uncached.config.publicUrl, '')
      }
    }
    const next = await follow('/api/v1/sync/post')
    const events = await eventTestApp(db.url)
    try {
      const { stream } = await events.open('/api/v1/events?types=post')
      await applied(async () => {
        await cms`update entry_translations set title = 'Synced again' where entry_id = 101`
        await cms`update entries set status = 'draft' where id = 102`
      })
      const heard = new Set<number>()
      while (!heard.has(101) || !heard.has(102)) for (const id of (await stream.nextEvent()).data.ids ?? []) heard.add(id)
      await follow(next)
      const fresh = new Map(copy)
      copy.clear()
      await follow('/api/v1/sync/post')
      expect([...fresh.entries()].sort()).toEqual([...copy.entries()].sort())
      expect(JSON.parse(fresh.get(101)!).title).toBe('Synced again')
      expect(fresh.has(102)).toBe(false)
    } finally {
      await events.cancelStreams()
      await events.close()
    }
  })
})
