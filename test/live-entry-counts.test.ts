import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { connectDatabase, type Sql } from '../src/db/connect'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addContentType, addEntry, clearContent, writeUnheard } from './support/fixtures'
import { links } from './support/links'
import { random } from './support/random'
import { waitFor } from './support/wait'

/**
 * C18 at a flat cost: the kept counts of sql/migrations/0003_live_entry_counts.sql
 * (design: sql/live-entry-counts.md) against count(*), under every kind of write
 * and the clock.
 */
const db = await createTestDatabase()
const api = testApp(db.url, {}, undefined, undefined, { liveCountCheck: true })
const writers = [0, 1, 2].map(() => connectDatabase(db.url, { max: 1 }))
afterAll(async () => {
  await api.close()
  await Promise.all(writers.map((writer) => writer.end()))
  await db.sql.end()
})
beforeEach(() => clearContent(db.sql))

interface Drift {
  content_type_id: number
  undated: boolean
  counted: number
  kept: number
}

/** Where the kept counts and count(*) disagree, in one snapshot: [] when they agree. */
const drift = async (): Promise<Drift[]> => [...(await db.sql<Drift[]>`select * from vitrine_live_entry_count_drift() order by content_type_id, undated`)]

/** count(*) of the live entries (C1) of each type, the oracle. */
async function counted(): Promise<Record<string, number>> {
  const rows = await db.sql<{ slug: string; live: number }[]>`
    select ct.slug, count(e.id) filter (where e.status = 'published' and (e.published_at is null or e.published_at <= now()))::int as live
    from content_types ct
    left join entries e on e.content_type_id = ct.id
    group by ct.slug
  `
  return Object.fromEntries(rows.map((row) => [row.slug, row.live]))
}

const TYPES = ['post', 'page', 'recipe']
const STATUSES = ['draft', 'scheduled', 'published', 'published', 'published'] as const

/** A publication time, as SQL: past, none, the near future (goes live during the test), far future, ±infinity. */
function someTime(rng: ReturnType<typeof random>): string {
  return rng.pick([
    `now() - interval '${Math.floor(rng.next() * 1000)} minutes'`,
    'null',
    `now() + interval '${Math.floor(200 + rng.next() * 1300)} milliseconds'`,
    `now() + interval '${Math.floor(1 + rng.next() * 100)} days'`,
    "'-infinity'",
    "'infinity'",
    "now() - interval '1 hour'",
  ])
}

/** One random write: every statement kind that can change what is live. Trusted SQL text: the test's own. */
async function randomWrite(writer: Sql, rng: ReturnType<typeof random>): Promise<void> {
  const type = `(select id from content_types where slug = '${rng.pick(TYPES)}')`
  const pick = `(select id from entries order by random() limit ${1 + Math.floor(rng.next() * 4)})`
  const statements = [
    `insert into entries (content_type_id, status, published_at) values (${type}, '${rng.pick(STATUSES)}', ${someTime(rng)})`,
    `insert into entries (content_type_id, status, published_at) select ${type}, '${rng.pick(STATUSES)}', ${someTime(rng)} from generate_series(1, ${1 + Math.floor(rng.next() * 5)})`,
    `update entries set status = '${rng.pick(STATUSES)}' where id in ${pick}`,
    `update entries set published_at = ${someTime(rng)} where id in ${pick}`,
    `update entries set content_type_id = ${type} where id in ${pick}`,
    `update entries set updated_at = now() where id in ${pick}`,
    `delete from entries where id in ${pick}`,
  ]
  const kind = rng.next()
  if (kind < 0.08) {
    // A transaction that rolls back changes nothing.
    await writer
      .begin(async (tx) => {
        await tx.unsafe(rng.pick(statements))
        await tx.unsafe(rng.pick(statements))
        throw new Error('rollback')
      })
      .catch((error) => {
        if (error.message !== 'rollback') throw error
      })
  } else if (kind < 0.16) {
    // Repeatable read: counted, never folded (sql/live-entry-counts.md).
    await writer.begin('isolation level repeatable read', async (tx) => {
      await tx.unsafe(rng.pick(statements))
      await tx.unsafe(rng.pick(statements))
    })
  } else if (kind < 0.2) {
    await copyEntries(writer, rng)
  } else if (kind < 0.3) {
    await writer.begin(async (tx) => {
      for (let i = 0; i < 3; i++) await tx.unsafe(rng.pick(statements))
    })
  } else {
    await writer.unsafe(rng.pick(statements))
  }
}

/**
 * Writers that update the same entries conflict on those rows whatever the counts do: a
 * repeatable read writer gets 40001, crossed updates 40P01. Their transactions roll back
 * whole (the counts with them), and the writer tries again, as real writers do. An UPDATE
 * or DELETE of entries is the only statement that can raise them: the counts are inserts.
 */
async function retryConflicts(write: () => Promise<void>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write()
    } catch (error) {
      const code = (error as { code?: string }).code
      if (attempt > 20 || (code !== '40001' && code !== '40P01') || (error as { routine?: string }).routine === undefined) throw error
    }
  }
}

/** Bulk COPY fires statement triggers with transition tables: counted like any insert. */
async function copyEntries(writer: Sql, rng: ReturnType<typeof random>): Promise<void> {
  const [{ id }] = await writer<{ id: number }[]>`select id from content_types where slug = ${rng.pick(TYPES)}`
  const [{ now }] = await writer<{ now: string }[]>`select (now() - interval '1 minute')::text as now`
  const stream = await writer`copy entries (content_type_id, status, published_at) from stdin`.writable()
  const lines = Array.from({ length: 1 + Math.floor(rng.next() * 6) }, () => `${id}\t${rng.pick(STATUSES)}\t${rng.pick([now, '\\N', '-infinity', 'infinity'])}\n`)
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject)
    stream.on('finish', resolve)
    stream.end(lines.join(''))
  })
}

describe('C18: kept live entry counts (sql/live-entry-counts.md)', () => {
  test('C18/C1: under random concurrent writes, COPY, rollbacks and go-lives, the kept counts equal count(*) in every snapshot', async () => {
    for (const type of TYPES) await addContentType(db.sql, type)
    const rng = random(18)
    let checks = 0
    for (let round = 0; round < 6; round++) {
      // Three writers at once, while the counts are compared from outside.
      await Promise.all(
        writers.map(async (writer, index) => {
          const own = random(round * 10 + index)
          for (let i = 0; i < 25; i++) await retryConflicts(() => randomWrite(writer, own))
        }),
      )
      expect([round, await drift()]).toEqual([round, []])
      checks++
      if (rng.next() < 0.5) {
        // Near-future entries go live while nobody writes: the totals follow the clock (C1).
        await Bun.sleep(400)
        expect([round, await drift()]).toEqual([round, []])
        checks++
      }
    }
    // Every near-future entry has gone live by now; the service's totals are the count of that moment.
    await waitFor('every near-future entry is live', async () => (await db.sql`select count(*)::int as n from entries where published_at > now() and published_at < now() + interval '2 seconds'`)[0].n === 0)
    expect(await drift()).toEqual([])
    const oracle = await counted()
    for (const type of TYPES) expect([type, (await api.get(`/api/v1/content/${type}`)).body.meta.total]).toEqual([type, oracle[type]])
    // The writes went through the folding path: live rows of each type stay few.
    const [{ rows }] = await db.sql`select count(*)::int as rows from live_entry_count_deltas where live_from <= now()`
    expect(rows).toBeLessThan(64 * TYPES.length + 2 * TYPES.length)
    expect(checks).toBeGreaterThanOrEqual(6)
  }, 60_000)

  test('C18: writers never wait for each other on the counts, in any order of types, folding or not', async () => {
    await addContentType(db.sql, 'page')
    const [first, second] = writers
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let started!: () => void
    const holding = new Promise<void>((resolve) => (started = resolve))
    const long = first!.begin(async (tx) => {
      // 70 statements: the 64th folds, and this transaction holds the fold until it commits.
      for (let i = 0; i < 70; i++) {
        await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - ${i} * interval '1 second' from content_types where slug = 'post'`
      }
      await tx`insert into entries (content_type_id, status, published_at) select id, 'published', null from content_types where slug = 'page'`
      started()
      await held
    })
    await holding
    // The fold's lock (and the term lists' compaction's, 0007, taken by the same statements) is held.
    const [{ folding }] = await db.sql`
      select count(*)::int as folding
      from pg_locks
      where locktype = 'advisory'
        and granted
        and database = (select oid from pg_database where datname = current_database())
        and (classid::int8 << 32) | objid::int8 = hashtext('vitrine_fold_live_entry_counts')
    `
    expect(folding).toBe(1)
    await holding
    // While that transaction is open: the same types, the other order, and 70 statements that would fold.
    await second!.begin(async (tx) => {
      await tx`set local lock_timeout = '1s'`
      await tx`insert into entries (content_type_id, status, published_at) select id, 'published', null from content_types where slug = 'page'`
      for (let i = 0; i < 70; i++) {
        await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '2 hours' from content_types where slug = 'post'`
      }
      await tx`update entries set status = 'draft' where id = (select min(id) from entries)`
      await tx`delete from entries where id = (select max(id) from entries where status = 'published' and published_at is not null)`
    })
    release()
    await long
    expect(await drift()).toEqual([])
  })

  test('C18: TRUNCATE, and a deleted type, leave no count behind', async () => {
    const recipe = await addContentType(db.sql, 'recipe')
    await addEntry(db.sql, { type: 'recipe' })
    await addEntry(db.sql)
    await db.sql`truncate entries cascade`
    expect((await db.sql`select * from live_entry_count_deltas`).length).toBe(0)
    await addEntry(db.sql, { type: 'recipe' })
    await db.sql`delete from entries where content_type_id = ${recipe}`
    await db.sql`delete from content_types where id = ${recipe}`
    expect(await drift()).toEqual([])
  })

  test('C18: counts drifted by writes with the triggers off are found, answered exactly meanwhile, and repaired', async () => {
    for (let i = 0; i < 3; i++) await addEntry(db.sql)
    await api.liveCounts!.check()
    expect((await api.get('/api/v1/content/post')).body.meta.total).toBe(3)
    // Triggers off (a restore without them): nothing is heard.
    await writeUnheard(db.sql, async (tx) => {
      await tx`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 minute' from content_types, generate_series(1, 2) where slug = 'post'`
    })
    const [{ id: postId }] = await db.sql`select id from content_types where slug = 'post'`
    expect(await drift()).toEqual([{ content_type_id: postId, undated: false, counted: 5, kept: 3 }])
    // Until the check runs, the kept count answers (the window the design note names).
    expect((await api.get('/api/v1/content/post')).body.meta.total).toBe(3)
    api.logs.length = 0
    await api.liveCounts!.check()
    expect(api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')).toMatchObject([{ type: 'post', counted: 5, kept: 3 }])
    const exact = await api.get('/api/v1/content/post?per_page=2')
    expect([exact.body.meta.total, exact.body.meta.last_page, exact.body.data.length]).toEqual([5, 3, 2])
    expect((await api.get('/api/v1/content/post?per_page=2&page=3')).body.data).toHaveLength(1)
    // The owner repairs; the next check goes back to the kept counts.
    await db.sql`select vitrine_repair_live_entry_counts()`
    expect(await drift()).toEqual([])
    await api.liveCounts!.check()
    expect(api.liveCounts!.countByScan('post')).toBe(false)
    expect(api.logs.some((line) => line.includes('agrees again'))).toBe(true)
    expect((await api.get('/api/v1/content/post')).body.meta.total).toBe(5)
  })

  test('C18/C11: a drift that keeps the total but moves entries between dated and undated is found too, and pages stay right', async () => {
    for (let i = 0; i < 4; i++) await addEntry(db.sql, { publishedAt: new Date(Date.now() - (i + 1) * 60_000) })
    for (let i = 0; i < 2; i++) await addEntry(db.sql, { publishedAt: null })
    await api.liveCounts!.check()
    const [{ id: postId }] = await db.sql`select id from content_types where slug = 'post'`
    await writeUnheard(db.sql, async (tx) => {
      await tx`update entries set published_at = null where id = (select max(id) from entries where published_at is not null)`
    })
    expect(await drift()).toEqual([
      { content_type_id: postId, undated: false, counted: 3, kept: 4 },
      { content_type_id: postId, undated: true, counted: 3, kept: 2 },
    ])
    await api.liveCounts!.check()
    expect(api.liveCounts!.countByScan('post')).toBe(true)
    const expected = (await db.sql<{ id: number }[]>`select id from entries where status = 'published' order by published_at desc nulls last, id desc`).map((row) => row.id)
    const walked: number[] = []
    for (let page = 1; page <= 3; page++) walked.push(...(await api.get(`/api/v1/content/post?per_page=2&page=${page}`)).body.data.map((item: any) => item.id))
    expect(walked).toEqual(expected)
    await db.sql`select vitrine_repair_live_entry_counts()`
    await api.liveCounts!.check()
    expect(api.liveCounts!.countByScan('post')).toBe(false)
  })

  test('C18: two repairs at once do not double the counts; a repair is the owner\'s alone', async () => {
    for (let i = 0; i < 5; i++) await addEntry(db.sql)
    const [first, second] = writers
    await Promise.all([first!`select vitrine_repair_live_entry_counts()`, second!`select vitrine_repair_live_entry_counts()`])
    expect(await drift()).toEqual([])
  })

  test('C18/C1: an embargoed entry is not counted before its time, by the row written for it or by a fold; it is counted once live', async () => {
    // The random writes above meet these often but not surely: one entry embargoed, then enough
    // statements (one row each) that the type's rows fold several times around it.
    await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', now() + interval '1500 milliseconds' from content_types where slug = 'post'`
    await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', now() + interval '1 day' from content_types where slug = 'post'`
    for (let i = 0; i < 140; i++) await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 hour' from content_types where slug = 'post'`
    const [{ rows }] = await db.sql`select count(*)::int as rows from live_entry_count_deltas where live_from <= now()`
    expect(rows).toBeLessThan(64)
    expect(await drift()).toEqual([])
    await waitFor('the first embargo ends', async () => (await db.sql`select count(*)::int as n from entries where published_at > now() and published_at < now() + interval '1 hour'`)[0].n === 0)
    expect(await drift()).toEqual([])
    expect((await api.get('/api/v1/content/post')).body.meta.total).toBe(141)
  })

  test('C18: rows of undated entries are folded like dated ones: a type written undated keeps few rows', async () => {
    for (let i = 0; i < 150; i++) await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', null from content_types where slug = 'post'`
    const [{ rows }] = await db.sql`select count(*)::int as rows from live_entry_count_deltas where live_from is null`
    expect(rows).toBeLessThan(64)
    expect(await drift()).toEqual([])
  })
})

/** C55/C56: where the entry guards, search_documents, search_postings and search_prefixes and a fresh computation from the base tables disagree: [] when they agree. */
const searchDrift = async () => [
  ...(await db.sql`select * from vitrine_entry_guard_drift() order by entry_id`),
  ...(await db.sql`select * from vitrine_search_document_drift() order by entry_id, language_code`),
  ...(await db.sql`select * from vitrine_search_posting_drift() order by entry_id, language_code, lexeme`),
  ...(await db.sql`select * from vitrine_search_prefix_drift() order by entry_id, language_code, prefix`),
]

const WORDS = ['alpha', 'alps', 'beta', 'betamax', 'gamma', 'delta', 'the', 'Alpha-beta']
const LANGUAGES = ['en', 'fr']

/** 130 distinct words besides WORDS: a text holding them is a long document, found through the GIN index instead of postings. */
const LONG_TEXT = Array.from({ length: 130 }, (_, i) => `filler${i}x`).join(' ')

/** Some words of WORDS, or null, now and then in a long text; as SQL text (the test's own words). */
function someText(rng: ReturnType<typeof random>, most: number): string {
  if (rng.next() < 0.15) return 'null'
  const words = Array.from({ length: 1 + Math.floor(rng.next() * most) }, () => rng.pick(WORDS))
  return `'${words.join(' ')}${rng.next() < 0.2 ? ` ${LONG_TEXT}` : ''}'`
}

/**
 * One random write of a writer of the search documents: entries and
 * entry_translations, every statement kind (the key of a translation
 * included), COPY, rollbacks. Trusted SQL text: the test's own.
 */
async function randomSearchWrite(writer: Sql, rng: ReturnType<typeof random>): Promise<void> {
  const type = `(select id from content_types where slug = '${rng.pick(TYPES)}')`
  const entries = `(select id from entries order by random() limit ${1 + Math.floor(rng.next() * 3)})`
  const translations = `(select entry_id, language_code from entry_translations order by random() limit ${1 + Math.floor(rng.next() * 3)})`
  const language = rng.pick(LANGUAGES)
  const statements = [
    `insert into entries (content_type_id, status, published_at) select ${type}, '${rng.pick(STATUSES)}', ${someTime(rng)} from generate_series(1, ${1 + Math.floor(rng.next() * 3)})`,
    `insert into entry_translations (entry_id, language_code, title, excerpt, body) select id, '${language}', ${someText(rng, 3)}, ${someText(rng, 4)}, ${someText(rng, 8)} from ${entries} e on conflict do nothing`,
    `insert into entry_translations (entry_id, language_code, title, excerpt, body) select id, '${language}', ${someText(rng, 3)}, ${someText(rng, 4)}, ${someText(rng, 8)} from entries e where not exists (select 1 from entry_translations t where t.entry_id = e.id) on conflict do nothing`,
    `update entry_translations set title = ${someText(rng, 3)} where (entry_id, language_code) in ${translations}`,
    `update entry_translations set excerpt = ${someText(rng, 4)}, body = ${someText(rng, 8)} where (entry_id, language_code) in ${translations}`,
    `update entry_translations set slug = 'moved' || random() where (entry_id, language_code) in ${translations}`,
    `update entry_translations t set language_code = case t.language_code when 'en' then 'fr' else 'en' end where (entry_id, language_code) in ${translations} and not exists (select 1 from entry_translations x where x.entry_id = t.entry_id and x.language_code <> t.language_code)`,
    `update entry_translations t set entry_id = (select id from entries e where not exists (select 1 from entry_translations x where x.entry_id = e.id) limit 1) where (entry_id, language_code) in (select * from ${translations} moved limit 1) and exists (select 1 from entries e where not exists (select 1 from entry_translations x where x.entry_id = e.id))`,
    `delete from entry_translations where (entry_id, language_code) in (select entry_id, language_code from entry_translations order by random() limit 1)`,
    `update entries set status = '${rng.pick(STATUSES)}' where id in ${entries}`,
    `update entries set published_at = ${someTime(rng)} where id in ${entries}`,
    `update entries set content_type_id = ${type} where id in ${entries}`,
    `update entries set author_id = (select id from authors order by random() limit 1) where id in ${entries}`,
    `delete from entries where id in (select id from entries order by random() limit 1)`,
  ]
  const kind = rng.next()
  if (kind < 0.08) {
    await writer
      .begin(async (tx) => {
        await tx.unsafe(rng.pick(statements))
        throw new Error('rollback')
      })
      .catch((error) => {
        if (error.message !== 'rollback') throw error
      })
  } else if (kind < 0.12) {
    await copyTranslations(writer, rng)
  } else if (kind < 0.45) {
    // C56: at any isolation level, the snapshot taken a moment before the writes (others commit meanwhile).
    const isolation = rng.pick(['read committed', 'repeatable read', 'serializable'])
    const writes = Array.from({ length: 1 + Math.floor(rng.next() * 3) }, () => rng.pick(statements))
    const pause = Math.floor(rng.next() * 5)
    await writer.begin(`isolation level ${isolation}`, async (tx) => {
      await tx`select 1`
      await Bun.sleep(pause)
      for (const write of writes) await tx.unsafe(write)
    })
  } else {
    await writer.unsafe(rng.pick(statements))
  }
}

/**
 * COPY into entry_translations fires the statement triggers with transition tables: kept like an
 * insert. Of entries made in the same transaction: no other writer can race for their keys.
 */
async function copyTranslations(writer: Sql, rng: ReturnType<typeof random>): Promise<void> {
  await writer.begin(async (tx) => {
    const made = await tx<{ id: number }[]>`
      insert into entries (content_type_id, status, published_at)
      select id, 'published', now() - interval '1 minute' from content_types, generate_series(1, 2) where slug = 'post'
      returning id
    `
    const stream = await tx`copy entry_translations (entry_id, language_code, title, body) from stdin`.writable()
    const lines = made.map(({ id }) => `${id}\t${rng.pick(LANGUAGES)}\t${rng.pick(WORDS)} ${rng.pick(WORDS)}\t${rng.pick(WORDS)}\n`)
    await new Promise<void>((resolve, reject) => {
      stream.on('error', reject)
      stream.on('finish', resolve)
      stream.end(lines.join(''))
    })
  })
}

/**
 * The ids a search answers (C42, C14, C55) computed from the base tables: the oracle. A search
 * ending in a word with no space after it also matches that word as a prefix (written and
 * stemmed); exact matches rank first.
 */
async function searchedFromBaseTables(search: string, lang: string, order: 'relevance' | 'date', author: number | null = null): Promise<number[]> {
  const prefix = /\s$/.test(search) ? null : search
  const rows = await db.sql<{ id: number }[]>`
    with language as (
      select coalesce(max(code) filter (where code = ${lang}), max(code) filter (where is_default)) as selected, max(code) filter (where is_default) as fallback
      from languages
    ),
    shown as (
      select e.id, e.published_at, vitrine_search_document(t.language_code, t.title, t.excerpt, t.body) as document,
        websearch_to_tsquery(vitrine_search_config(t.language_code), ${search}) as exact,
        websearch_to_tsquery(vitrine_search_config(t.language_code), ${search})
          || coalesce((nullif(websearch_to_tsquery('simple', ${prefix})::text, '') || ':*')::tsquery, ''::tsquery)
          || coalesce((nullif(websearch_to_tsquery(vitrine_search_config(t.language_code), ${prefix})::text, '') || ':*')::tsquery, ''::tsquery) as query
      from entries e
      join entry_translations t on t.entry_id = e.id
      where e.content_type_id = (select id from content_types where slug = 'post')
        and e.status = 'published'
        and (e.published_at is null or e.published_at <= now())
        and (${author}::int8 is null or e.author_id = ${author}::int8)
        and (t.language_code = (select selected from language)
          or (t.language_code = (select fallback from language)
            and not exists (select 1 from entry_translations x where x.entry_id = e.id and x.language_code = (select selected from language))))
    )
    select id
    from shown
    where document @@ query
    order by ${order === 'relevance' ? db.sql`case when document @@ exact then ts_rank_cd(document, exact) else (-1 / (1 + ts_rank_cd(document, query)::float8))::real end desc,` : db.sql``} published_at desc nulls last, id desc
  `
  return rows.map((row) => row.id)
}

describe('C55: search documents (sql/search-structure.md)', () => {
  test('C55/C42/C14/C56: under random concurrent writes of entries and translations at random isolation levels, COPY and rollbacks, search_documents equals a fresh computation and searches answer as the base tables say', async () => {
    for (const type of TYPES) await addContentType(db.sql, type)
    await db.sql`insert into languages (code, name) values ('fr', 'Français') on conflict do nothing`
    await db.sql`insert into authors (name) values ('Ada'), ('Grace')`
    // A site to start from: 30 entries of every kind, each with an English translation, half with a French one.
    const seed = random(55)
    for (let i = 0; i < 30; i++) {
      await db.sql.unsafe(`insert into entries (content_type_id, status, published_at) values ((select id from content_types where slug = '${seed.pick(TYPES)}'), '${seed.pick(STATUSES)}', ${someTime(seed)})`)
    }
    // Words drawn per row by the database: every translation its own text.
    const word = `(array['${WORDS.join("', '")}'])[1 + floor(random() * ${WORDS.length})::int]`
    await db.sql.unsafe(`insert into entry_translations (entry_id, language_code, title, excerpt, body) select id, 'en', ${word} || ' ' || ${word}, ${word}, ${word} || ' ' || ${word} || ' ' || ${word} from entries`)
    await db.sql.unsafe(`insert into entry_translations (entry_id, language_code, title, body) select id, 'fr', ${word}, ${word} || ' ' || ${word} from entries where id % 2 = 0`)
    for (let i = 0; i < 20; i++) await randomSearchWrite(db.sql, seed)
    let found = 0
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        writers.map(async (writer, index) => {
          const own = random(550 + round * 10 + index)
          for (let i = 0; i < 25; i++) await retryConflicts(() => randomSearchWrite(writer, own).catch(skipKeyConflict))
        }),
      )
      expect([round, await searchDrift()]).toEqual([round, []])
      expect((await db.sql`select count(*)::int as n from search_documents`)[0].n).toBeGreaterThan(15)
      // Long documents (no postings) and short ones (postings) both.
      expect((await db.sql`select count(distinct posted)::int as n from search_documents`)[0].n).toBe(2)
      // Entries about to go live would go live between an answer and its oracle: compared once they have.
      await waitFor('every near-future entry is live', async () => (await db.sql`select count(*)::int as n from entries where published_at > now() and published_at < now() + interval '2 seconds'`)[0].n === 0)
      for (const lang of LANGUAGES) {
        // One word (search_postings) and several (the GIN index of search_documents).
        for (const search of ['alpha ', 'alpha', 'alp', 'the', 'bet', 'beta -gamma ', 'delta or gamma ', '"alpha beta" ']) {
          for (const order of ['relevance', 'date'] as const) {
            const answer = await api.get(`/api/v1/content/post?per_page=100&lang=${lang}&order=${order}&search=${encodeURIComponent(search)}`)
            expect([round, lang, search, order, answer.body.data.map((item: any) => item.id)]).toEqual([round, lang, search, order, await searchedFromBaseTables(search, lang, order)])
            expect(answer.body.meta.total).toBe(answer.body.data.length)
            if (answer.body.data.length > 0) found++
          }
        }
        // Pages of a few by cursor (C39), and with an author (C43): one word and a prefix, whose
        // postings are counted and paged unstored.
        const [ada] = await db.sql<{ id: number }[]>`select id from authors where name = 'Ada'`
        for (const search of ['alpha ', 'alp']) {
          const walked: number[] = []
          let next: string | undefined = `/api/v1/content/post?per_page=2&lang=${lang}&search=${search}`
          for (let page = 0; next !== undefined && page < 100; page++) {
            const answer = await api.get(next)
            walked.push(...answer.body.data.map((item: any) => item.id))
            next = links(answer.headers).next?.replace(/^https?:\/\/[^/]+/, '')
          }
          expect([round, lang, search, 'walked', walked]).toEqual([round, lang, search, 'walked', await searchedFromBaseTables(search, lang, 'relevance')])
          const byAuthor = await api.get(`/api/v1/content/post?per_page=100&lang=${lang}&author=${ada!.id}&search=${search}`)
          const expected = await searchedFromBaseTables(search, lang, 'relevance', ada!.id)
          expect([round, lang, search, 'author', byAuthor.body.data.map((item: any) => item.id), byAuthor.body.meta.total]).toEqual([round, lang, search, 'author', expected, expected.length])
        }
      }
    }
    // The searches had something to find most of the time.
    expect(found).toBeGreaterThan(32)
  }, 120_000)

  test('C55: a repeatable read writer of translations is kept; TRUNCATE and deleted entries leave no row; a repair after writes with the triggers off', async () => {
    await db.sql`insert into languages (code, name) values ('fr', 'Français') on conflict do nothing`
    const id = await addEntry(db.sql, { translations: { en: { title: 'Alpha', slug: 'a' }, fr: { title: 'Alpha', slug: 'a-fr' } } })
    await writers[0]!.begin('isolation level repeatable read', async (tx) => {
      await tx`update entry_translations set title = 'Beta' where entry_id = ${id} and language_code = 'en'`
      await tx`insert into entry_translations (entry_id, language_code, title) select id, 'fr', 'Gamma' from entries where id <> ${id} on conflict do nothing`
    })
    expect(await searchDrift()).toEqual([])
    await db.sql`delete from entries where id = ${id}`
    expect((await db.sql`select count(*)::int as n from search_documents where entry_id = ${id}`)[0].n).toBe(0)
    await addEntry(db.sql)
    await db.sql`truncate entry_translations`
    expect((await db.sql`select count(*)::int as n from search_documents`)[0].n).toBe(0)
    await addEntry(db.sql)
    await db.sql`truncate entries cascade`
    expect((await db.sql`select count(*)::int as n from search_documents`)[0].n).toBe(0)
    const kept = await addEntry(db.sql, { translations: { en: { title: 'Alpha', slug: 'a' } } })
    await writeUnheard(db.sql, async (tx) => {
      await tx`update entry_translations set title = 'Delta' where entry_id = ${kept}`
    })
    expect(await searchDrift()).toEqual([{ entry_id: kept, language_code: 'en', kept: true, computed: true }])
    await db.sql`select vitrine_repair_search_documents()`
    expect(await searchDrift()).toEqual([])
    expect((await api.get('/api/v1/content/post?search=delta')).body.data.map((item: any) => item.id)).toEqual([kept])
    // search_postings truncated by hand: its prefixes (0016) go with it; the whole repair makes both again.
    expect((await db.sql`select count(*)::int as n from search_prefixes`)[0].n).toBeGreaterThan(0)
    await db.sql`truncate search_postings`
    expect((await db.sql`select count(*)::int as n from search_prefixes`)[0].n).toBe(0)
    await db.sql`select vitrine_repair_search_documents()`
    expect(await searchDrift()).toEqual([])
    expect((await api.get('/api/v1/content/post?search=del')).body.data.map((item: any) => item.id)).toEqual([kept])
  })

  test('C43/C42/C55: one word and three letters count and answer long documents, the default language\'s fallback and short documents; never an embargoed entry', async () => {
    // The random writes above meet each of these most of the time; here, always.
    await db.sql`insert into languages (code, name) values ('fr', 'Français') on conflict do nothing`
    const hour = 3_600_000
    const short = await addEntry(db.sql, { publishedAt: new Date(Date.now() - hour), translations: { fr: { title: 'Alpha', slug: 'short' } } })
    const long = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 2 * hour), translations: { fr: { title: 'Alpha', body: LONG_TEXT, slug: 'long' } } })
    const fallback = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 3 * hour), translations: { en: { title: 'Alpha', slug: 'fallback' } } })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + 24 * hour), translations: { fr: { title: 'Alpha', slug: 'embargoed' } } })
    await addEntry(db.sql, { status: 'draft', translations: { fr: { title: 'Alpha', slug: 'draft' } } })
    expect((await db.sql`select count(distinct posted)::int as n from search_documents`)[0].n).toBe(2)
    for (const search of ['alpha ', 'alpha', 'alp']) {
      for (const order of ['relevance', 'date']) {
        const answer = await api.get(`/api/v1/content/post?lang=fr&order=${order}&search=${search}`)
        expect([search, order, answer.body.data.map((item: any) => item.id), answer.body.meta.total]).toEqual([search, order, [short, long, fallback], 3])
      }
    }
  })

  test('C55/C56: a three-letter word deleted from a text takes its exact score out of search_prefixes: the entry ranks as a prefix match again', async () => {
    // The random writes above meet this case only now and then: a word of three letters removed
    // from a text that keeps another word of the same prefix.
    const newer = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 2 * 3_600_000), translations: { en: { title: 'Alphabet', slug: 'newer' } } })
    const older = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 3 * 3_600_000), translations: { en: { title: 'Alps alphabet', slug: 'older' } } })
    const ranked = async () => (await api.get('/api/v1/content/post?search=alp')).body.data.map((item: any) => item.id)
    // "alps" is the lexeme "alp": the older entry matches the three letters as a word, and ranks first.
    expect(await ranked()).toEqual([older, newer])
    await db.sql`update entry_translations set title = 'Alphabet' where entry_id = ${older}`
    expect(await searchDrift()).toEqual([])
    // Both now match as a prefix alone, with the same score: the newer first.
    expect(await ranked()).toEqual([newer, older])
  })
})

/**
 * Writers racing for one key (23505), or writing a translation of an entry another writer just
 * deleted (23503): the statement fails and changes nothing, as a real writer's would.
 */
function skipKeyConflict(error: { code?: string }): void {
  if (error.code !== '23505' && error.code !== '23503') throw error
}
