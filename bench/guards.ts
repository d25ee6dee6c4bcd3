/**
 * `bun run bench:guards`, part of `bun run bench`: what the entry guards of
 * C56 (sql/any-writer.md) cost writers. Three databases of the benchmark's
 * data set (bench/large-dataset.sql, 20 000 entries): the service as it is;
 * the same with the guard triggers (`*_0_guarded_*`) disabled; and the
 * service as it was before the guards (migrations up to 0009: share locks,
 * search rows copying their entry). The same statements on the three,
 * alternated statement by statement, each timed as its writer waits for it
 * in a transaction rolled back: a
 * translation's title updated, a translation inserted, an entry's status
 * updated (one row each, median of 201), 10 000 entries inserted, and 10 000
 * translations of new entries inserted (one statement each, median of 5).
 * With the guards disabled the search rows find no guard to read their
 * entry's state from (0011 keeps it there): that difference is the guards'
 * cost with the search maintenance that moved into them; the one with the
 * service before them is what a writer pays now against then.
 *
 * Target (the C56 issue's): the guards add at most 10% to each.
 * BENCH_GUARDS_BEFORE (default 0010): the third database has the migrations
 * before this one (0016: the service before search_prefixes and 0017).
 * DATABASE_URL: the server (default postgres://postgres@127.0.0.1:5432/postgres).
 * Writes bench/guards-last-run.md.
 */
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { migrate } from '../src/db/migrate'
import { datasetSql, ensureBenchDatabase } from './dataset'
import { migrationsBefore } from './migrations-before'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SIZE = 20_000
const BEFORE = process.env.BENCH_GUARDS_BEFORE ?? '0010'
const SINGLE_ROWS = 201
const BULK_ROUNDS = 5

/** Thrown to roll a measured write back. */
class Rollback extends Error {}

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

/** Milliseconds of `statement` as its writer waits for it (triggers included), after `before`, all rolled back. Trusted text: this file's own. */
async function measured(sql: Sql, statement: string, before = ''): Promise<number> {
  let ms = 0
  await sql
    .begin(async (tx) => {
      await tx`insert into languages (code, name) values ('xx', 'Bench') on conflict do nothing`
      if (before) await tx.unsafe(before)
      const started = performance.now()
      await tx.unsafe(statement)
      ms = performance.now() - started
      throw new Rollback()
    })
    .catch((error) => {
      if (!(error instanceof Rollback)) throw error
    })
  return ms
}

const admin = connectDatabase(SERVER, { max: 1 })
const dbs: Sql[] = []
try {
  // Fresh copies, each run: rolled-back writes leave dead rows behind, which a reused database would carry.
  const { url: templateUrl } = await ensureBenchDatabase(admin, SERVER, SIZE)
  const name = new URL(templateUrl).pathname.slice(1)
  const guarded = `${name}_guarded`
  const unguarded = `${name}_unguarded`
  for (const copy of [guarded, unguarded]) {
    await admin.unsafe(`drop database if exists ${copy} with (force)`)
    await admin.unsafe(`create database ${copy} template ${name}`)
  }
  const url = Object.assign(new URL(templateUrl), { pathname: `/${guarded}` }).toString()
  const guardedDb = connectDatabase(url, { max: 1 })
  const unguardedDb = connectDatabase(Object.assign(new URL(url), { pathname: `/${unguarded}` }).toString(), { max: 1 })
  dbs.push(guardedDb, unguardedDb)
  for (const [table, trigger] of (await unguardedDb<{ table: string; trigger: string }[]>`select c.relname as table, t.tgname as trigger from pg_trigger t join pg_class c on c.oid = t.tgrelid where t.tgname like '%\\_0\\_guarded\\_%'`).map((row) => [row.table, row.trigger])) {
    await unguardedDb.unsafe(`alter table ${table} disable trigger ${trigger}`)
  }
  const before = `${name}_before_guards`
  await admin.unsafe(`drop database if exists ${before} with (force)`)
  await admin.unsafe(`create database ${before}`)
  const beforeDb = connectDatabase(Object.assign(new URL(url), { pathname: `/${before}` }).toString(), { max: 1 })
  dbs.push(beforeDb)
  const upToBefore = await migrationsBefore(BEFORE)
  await migrate(beforeDb, upToBefore).finally(() => rm(upToBefore, { recursive: true, force: true }))
  await beforeDb.unsafe(await datasetSql(SIZE))
  await beforeDb.unsafe('vacuum analyze')
  const [{ max, maxId }] = await guardedDb<{ max: number; maxId: number }[]>`select max(id) filter (where status = 'published')::int8 as max, max(id)::int8 as "maxId" from entries`
  const ids = Array.from({ length: SINGLE_ROWS }, (_, i) => 1 + Math.floor(((i + 0.5) * max) / SINGLE_ROWS))
  const cases: [string, (id: number) => [string, string?], number][] = [
    ['update of a translation\'s title', (id) => [`update entry_translations set title = title || ' revised' where entry_id = ${id} and language_code = 'en'`], SINGLE_ROWS],
    ['insert of a translation', (id) => [`insert into entry_translations (entry_id, language_code, title, slug, excerpt) values (${id}, 'xx', 'Bench title', 'bench-${id}', 'Bench excerpt')`], SINGLE_ROWS],
    ['update of an entry\'s status (published → draft)', (id) => [`update entries set status = 'draft' where id = ${id}`], SINGLE_ROWS],
    ['10 000 entries inserted (one statement)', () => [`insert into entries (content_type_id, status, published_at) select (select id from content_types where slug = 'post'), 'published', now() - interval '1 minute' * g from generate_series(1, 10000) g`], BULK_ROUNDS],
    [
      '10 000 translations of new entries inserted (one statement)',
      () => [
        `insert into entry_translations (entry_id, language_code, title, slug, excerpt) select id, 'xx', 'Bench title ' || id, 'bench-' || id, 'Bench excerpt' from entries where id > ${maxId}`,
        `insert into entries (id, content_type_id, status, published_at) select ${maxId} + g, (select id from content_types where slug = 'post'), 'published', now() - interval '1 minute' * g from generate_series(1, 10000) g`,
      ],
      BULK_ROUNDS,
    ],
  ]
  say(`# What the entry guards cost writers (C56), ${SIZE.toLocaleString('en')} entries`)
  say()
  say(`| statement | service (ms) | guards disabled (ms) | ÷ | ${BEFORE === '0010' ? 'before the guards' : `before ${BEFORE}`} (ms) | ÷ |`)
  say('|---|---:|---:|---:|---:|---:|')
  for (const [caseName, statement, runs] of cases) {
    const now: number[] = []
    const without: number[] = []
    const then: number[] = []
    for (let run = 0; run < runs; run++) {
      const [text, setUp] = statement(ids[run % ids.length]!)
      // Alternated: the machine's noise falls on the three alike.
      now.push(await measured(guardedDb, text, setUp))
      without.push(await measured(unguardedDb, text, setUp))
      then.push(await measured(beforeDb, text, setUp))
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    const [a, b, c] = [median(now), median(without), median(then)]
    say(`| ${caseName} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(a / b).toFixed(2)} | ${c.toFixed(3)} | ${(a / c).toFixed(2)} |`)
  }
  say()
  say('Target (the C56 issue): the guards add at most 10% to each (÷ guards disabled ≤ 1.10).')
  await writeFile(join(import.meta.dir, 'guards-last-run.md'), `${lines.join('\n')}\n`)
  await Promise.all(dbs.map((db) => db.end()))
  dbs.length = 0
  for (const copy of [guarded, unguarded, before]) await admin.unsafe(`drop database if exists ${copy} with (force)`).catch(() => {})
} finally {
  await Promise.all(dbs.map((db) => db.end()))
  await admin.end()
}
