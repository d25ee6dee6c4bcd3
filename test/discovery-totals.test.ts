import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { connectDatabase } from '../src/db/connect'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { databaseClockPassed, databaseTime } from './support/database-clock'
import { addContentType, addEntry, addTerm, clearContent, writeUnheard } from './support/fixtures'
import { random } from './support/random'

/**
 * C46: the live totals of the discovery routes against the lists they count.
 * A term's `total` is `meta.total` of the list filtered by `taxonomy:slug`
 * (C40); a content type's is `meta.total` of its list (C18). After random
 * writes of every kind, go-lives, and with the kept counts drifted.
 */
const db = await createTestDatabase()
const api = testApp(db.url, {}, undefined, undefined, { liveCountCheck: true })
const writer = connectDatabase(db.url, { max: 1 })
afterAll(async () => {
  await api.close()
  await writer.end()
  await db.sql.end()
})
beforeEach(() => clearContent(db.sql))

const TYPES = ['post', 'page', 'recipe']

/** Every term page of a taxonomy, walked by number. */
async function allTerms(taxonomy: string, type?: string): Promise<{ id: number; name: string; slug: string; total: number }[]> {
  const terms = []
  for (let page = 1; ; page++) {
    const response = await api.get(`/api/v1/taxonomies/${taxonomy}/terms?per_page=7&page=${page}${type ? `&type=${type}` : ''}`)
    expect(response.status).toBe(200)
    terms.push(...response.body.data)
    if (page >= response.body.meta.last_page) {
      expect(response.body.meta.total).toBe(terms.length)
      return terms
    }
  }
}

/** The oracle: the term's filtered list, counted by the content route itself (summed over the types without one). */
async function filteredTotal(taxonomy: string, slug: string, type?: string): Promise<number> {
  let total = 0
  for (const each of type ? [type] : TYPES) total += (await api.get(`/api/v1/content/${each}?term=${taxonomy}:${encodeURIComponent(slug)}&per_page=1`)).body.meta.total
  return total
}

/** Every term of the taxonomy that a live entry (of the type) carries, by count(*) in name then id order. */
async function carriedByCount(taxonomy: string, type?: string): Promise<number[]> {
  const rows = await db.sql<{ id: number }[]>`
    select t.id
    from terms t
    join taxonomies x on x.id = t.taxonomy_id
    where x.slug = ${taxonomy}
      and exists (
        select 1
        from entry_terms et
        join entries e on e.id = et.entry_id
        join content_types ct on ct.id = e.content_type_id
        where et.term_id = t.id
          and e.status = 'published'
          and (e.published_at is null or e.published_at <= now())
          and (${type ?? null}::text is null or ct.slug = ${type ?? null})
      )
    order by t.name, t.id
  `
  return rows.map((row) => row.id)
}

async function checkAgainstLists(label: string) {
  for (const taxonomy of ['tag', 'category']) {
    for (const type of [undefined, ...TYPES]) {
      const terms = await allTerms(taxonomy, type)
      expect([label, taxonomy, type, terms.map((term) => term.id)]).toEqual([label, taxonomy, type, await carriedByCount(taxonomy, type)])
      for (const term of terms) {
        expect([label, taxonomy, type, term.slug, term.total]).toEqual([label, taxonomy, type, term.slug, await filteredTotal(taxonomy, term.slug, type)])
      }
    }
  }
  const types = (await api.get('/api/v1/content-types')).body.data
  for (const type of types) expect([label, type.slug, type.total]).toEqual([label, type.slug, (await api.get(`/api/v1/content/${type.slug}?per_page=1`)).body.meta.total])
}

/** A check that must hold before `goLive`; one that a slow machine let run past it says nothing (the next check runs after it). */
async function checkBefore(goLive: Date, label: string) {
  try {
    await checkAgainstLists(label)
  } catch (error) {
    if ((await db.sql<{ passed: boolean }[]>`select now() >= ${goLive} as passed`)[0].passed) return
    throw error
  }
}

describe('C46: term and content type totals equal the lists they count', () => {
  test('after random writes of entries, terms and their links, with go-lives between, and with duplicate slugs in a taxonomy', async () => {
    for (const type of TYPES) await addContentType(db.sql, type)
    const rng = random(46)
    const tags = [] as number[]
    for (let i = 0; i < 8; i++) tags.push(await addTerm(db.sql, 'tag', `Tag ${String.fromCharCode(72 - i)}`, `tag-${i % 6}`))
    const categories = [await addTerm(db.sql, 'category', 'News'), await addTerm(db.sql, 'category', 'Guides')]
    const terms = [...tags, ...categories]
    const entries: number[] = []
    // Entries that go live during the test all do at one moment per round, after that round's writes and first
    // check (0.2–0.5 s together here: 2 s leaves them room on a loaded machine; checkBefore says nothing of a
    // check that overran, and the check after the go-live runs whatever happened before it).
    let goLive = await databaseTime(db.sql, 2000)
    const someTime = () => rng.pick([null, new Date(Date.now() - rng.next() * 1e9), goLive, new Date(Date.now() + 86_400_000)])
    for (let i = 0; i < 30; i++) {
      entries.push(
        await addEntry(db.sql, {
          type: rng.pick(TYPES),
          status: rng.pick(['published', 'published', 'published', 'draft', 'scheduled'] as const),
          publishedAt: someTime(),
          termIds: terms.filter(() => rng.next() < 0.3),
        }),
      )
    }
    await checkBefore(goLive, 'initial')
    for (let round = 0; round < 4; round++) {
      goLive = await databaseTime(db.sql, 2000)
      for (let i = 0; i < 12; i++) {
        const entry = rng.pick(entries)
        const term = rng.pick(terms)
        const write = rng.pick([
          () => writer`insert into entry_terms (entry_id, term_id) values (${entry}, ${term}) on conflict do nothing`,
          () => writer`delete from entry_terms where entry_id = ${entry} and term_id = ${term}`,
          () => writer`update entries set status = ${rng.pick(['published', 'draft', 'scheduled'])} where id = ${entry}`,
          () => writer`update entries set published_at = ${someTime()} where id = ${entry}`,
          () => writer`update entries set content_type_id = (select id from content_types where slug = ${rng.pick(TYPES)}) where id = ${entry}`,
          () => writer`update terms set slug = ${`tag-${Math.floor(rng.next() * 6)}`} where id = ${rng.pick(tags)}`,
          () => writer`update terms set name = ${`Tag ${Math.floor(rng.next() * 100)}`} where id = ${rng.pick(tags)}`,
        ])
        await write()
      }
      await checkBefore(goLive, `round ${round}`)
      // Entries go live while nobody writes.
      await databaseClockPassed(db.sql, goLive)
      await checkAgainstLists(`round ${round}, after its go-lives`)
    }
  }, 60_000)

  test('with the kept counts drifted (written with the triggers off), the totals are still exact: the drifted type is counted one by one', async () => {
    const tag = await addTerm(db.sql, 'tag', 'Drift')
    await addEntry(db.sql, { termIds: [tag] })
    // Of a type that did not drift, whose kept rows the list still sums: embargoed, so not counted (C2).
    await addEntry(db.sql, { type: 'page', publishedAt: new Date(Date.now() + 86_400_000), termIds: [tag, await addTerm(db.sql, 'tag', 'Embargoed')] })
    await writeUnheard(db.sql, async (tx) => {
      await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 day' from content_types where slug = 'post'`
      await tx`insert into entry_terms (entry_id, term_id) select max(id), ${tag} from entries`
    })
    await api.liveCounts!.check()
    expect(api.liveCounts!.driftedTypes()).toEqual(['post'])
    try {
      expect((await api.get('/api/v1/taxonomies/tag/terms')).body.data).toEqual([{ id: tag, name: 'Drift', slug: 'drift', total: 2 }])
      expect((await api.get('/api/v1/taxonomies/tag/terms?type=post')).body.data[0].total).toBe(2)
      expect((await api.get('/api/v1/content-types')).body.data.find((type: any) => type.slug === 'post').total).toBe(2)
    } finally {
      await db.sql`select vitrine_repair_live_entry_counts()`
      await api.liveCounts!.check()
    }
  })
})

describe('C46: a term list reads its page by name and its meta.total from term_list_carried (migration 0007)', () => {
  test('exact while writers leave their terms dirty: one holds the compaction (read committed, open), others write in repeatable read or cannot take it, move and rename terms; go-lives between', async () => {
    for (const type of TYPES) await addContentType(db.sql, type)
    const rng = random(4607)
    const terms = [] as number[]
    for (let i = 0; i < 6; i++) terms.push(await addTerm(db.sql, 'tag', `Dirty ${i}`))
    terms.push(await addTerm(db.sql, 'category', 'Dirty category'))
    const entries: number[] = []
    for (let i = 0; i < 12; i++) entries.push(await addEntry(db.sql, { type: rng.pick(TYPES), termIds: terms.filter(() => rng.next() < 0.3) }))
    const heldEntry = await addEntry(db.sql, { type: 'post' })
    await checkAgainstLists('before')
    const holder = connectDatabase(db.url, { max: 1 })
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding = () => {}
    const held = new Promise<void>((resolve) => (holding = resolve))
    // A writer whose statement compacted and which stays open: it keeps the compaction lock to its commit.
    const open = holder.begin(async (tx) => {
      await tx`update entries set created_at = created_at where id = ${heldEntry}`
      holding()
      await released
    })
    try {
      await held
      const goLive = await databaseTime(db.sql, 3000)
      for (let i = 0; i < 16; i++) {
        const entry = rng.pick(entries)
        const term = rng.pick(terms)
        const write = rng.pick([
          () => writer`insert into entry_terms (entry_id, term_id) values (${entry}, ${term}) on conflict do nothing`,
          () => writer`delete from entry_terms where entry_id = ${entry} and term_id = ${term}`,
          () => writer`update entries set status = ${rng.pick(['published', 'draft'])} where id = ${entry}`,
          () => writer`update entries set published_at = ${rng.pick([null, goLive, new Date(Date.now() - 60_000), new Date(Date.now() + 86_400_000)])} where id = ${entry}`,
          () => writer`update terms set taxonomy_id = (select id from taxonomies where slug = ${rng.pick(['tag', 'category'])}) where id = ${term}`,
          () => writer`update terms set name = ${`Dirty ${Math.floor(rng.next() * 100)}`} where id = ${term}`,
          () => writer.begin('isolation level repeatable read', (tx) => tx`insert into entry_terms (entry_id, term_id) values (${entry}, ${term}) on conflict do nothing`),
        ])
        await write()
      }
      const [{ dirty }] = await db.sql<{ dirty: number }[]>`select count(*)::int as dirty from term_list_dirty`
      expect(dirty).toBeGreaterThan(0)
      await checkBefore(goLive, 'dirty')
      await databaseClockPassed(db.sql, goLive)
      await checkAgainstLists('dirty, after the go-lives')
    } finally {
      release()
      await open
      await holder.end()
    }
    // The next write compacts every dirty term.
    await writer`update entries set created_at = created_at where id = ${entries[1]}`
    expect((await db.sql<{ dirty: number }[]>`select count(*)::int as dirty from term_list_dirty`)[0].dirty).toBe(0)
    await checkAgainstLists('compacted')
  }, 60_000)

  test('a term moved to another taxonomy leaves the one list and joins the other; a term deleted leaves its list; a repair rewrites rows that were wrong', async () => {
    const moved = await addTerm(db.sql, 'tag', 'Moved')
    const gone = await addTerm(db.sql, 'tag', 'Gone')
    await addTerm(db.sql, 'category', 'Other')
    await addEntry(db.sql, { termIds: [moved, gone] })
    expect((await api.get('/api/v1/taxonomies/tag/terms')).body.data.map((term: any) => term.id)).toEqual([gone, moved])
    await writer`update terms set taxonomy_id = (select id from taxonomies where slug = 'category') where id = ${moved}`
    await writer`delete from terms where id = ${gone}`
    const tags = (await api.get('/api/v1/taxonomies/tag/terms')).body
    expect([tags.data, tags.meta.total]).toEqual([[], 0])
    const categories = (await api.get('/api/v1/taxonomies/category/terms')).body
    expect([categories.data, categories.meta.total]).toEqual([[{ id: moved, name: 'Moved', slug: 'moved', total: 1 }], 1])
    await db.sql`update term_list_carried set carried_from = 'infinity'`
    expect((await api.get('/api/v1/taxonomies/category/terms')).body.meta.total).toBe(0)
    await db.sql`select vitrine_repair_live_entry_counts()`
    expect((await api.get('/api/v1/taxonomies/category/terms')).body.data).toEqual([{ id: moved, name: 'Moved', slug: 'moved', total: 1 }])
  })

  test('0018: a write that carries every term as before neither rewrites nor locks their rows; one that changes a row rewrites it', async () => {
    const kept = await addTerm(db.sql, 'tag', 'Kept')
    const first = await addEntry(db.sql, { termIds: [kept] })
    const second = await addEntry(db.sql, { termIds: [kept] })
    // Each row's version (xmin) and its lock (xmax: a row locked by ON CONFLICT … DO UPDATE … WHERE false has the locker's).
    const rows = async () => [
      ...(await db.sql<{ content_type_id: number; xmin: string; xmax: string }[]>`
        select content_type_id, xmin::text, xmax::text from term_list_carried where term_id = ${kept} order by content_type_id
      `),
    ]
    const before = await rows()
    expect(before.length).toBe(2) // the post type and any type (0)
    // The term is still carried by the second entry: nothing of its rows changes.
    await writer`update entries set status = 'draft' where id = ${first}`
    expect(await rows()).toEqual(before)
    // Now it is carried by none: its rows go.
    await writer`update entries set status = 'draft' where id = ${second}`
    expect(await rows()).toEqual([])
    expect((await api.get('/api/v1/taxonomies/tag/terms')).body.meta.total).toBe(0)
  })
})

describe('C46/C2: a term that only hidden entries carry', () => {
  test('never appears (draft, scheduled, embargoed), nor counts, and appears at its go-live second without a write, while the list is cached', async () => {
    const shown = await addTerm(db.sql, 'tag', 'Shown')
    const hidden = await addTerm(db.sql, 'tag', 'Hidden')
    await addEntry(db.sql, { termIds: [shown] })
    await addEntry(db.sql, { status: 'draft', termIds: [hidden, shown] })
    await addEntry(db.sql, { status: 'scheduled', publishedAt: new Date(Date.now() + 86_400_000), termIds: [hidden] })
    const [{ at }] = await db.sql<{ at: Date }[]>`select now() + interval '1500 milliseconds' as at`
    await addEntry(db.sql, { publishedAt: at, termIds: [hidden] })
    const cached = await cachedTestApp(db.url, { CACHE_MAX_AGE: '300' })
    try {
      const terms = '/api/v1/taxonomies/tag/terms'
      const before = await cached.get(terms)
      expect(before.body).toEqual({ data: [{ id: shown, name: 'Shown', slug: 'shown', total: 1 }], meta: { current_page: 1, last_page: 1, per_page: 20, total: 1 } })
      expect(before.text).not.toContain('hidden')
      // The answer lives until the go-live, no longer (C33, C36).
      expect(before.headers.get('cache-control')).toMatch(/^public, (max-age=1|no-cache)$/)
      expect((await cached.get(terms)).headers.get('x-cache')).toBe('HIT')
      expect((await cached.get('/api/v1/content-types')).body.data.find((type: any) => type.slug === 'post').total).toBe(1)
      // Wait for the database's clock, not ours.
      await databaseClockPassed(db.sql, at)
      const after = await cached.get(terms)
      expect(after.headers.get('x-cache')).toBe('MISS')
      expect(after.body.data).toEqual([
        { id: hidden, name: 'Hidden', slug: 'hidden', total: 1 },
        { id: shown, name: 'Shown', slug: 'shown', total: 1 },
      ])
      expect((await cached.get('/api/v1/content-types')).body.data.find((type: any) => type.slug === 'post').total).toBe(2)
    } finally {
      await cached.close()
    }
  })
})
