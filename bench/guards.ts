/**
 * `bun run bench:guards`, part of `bun run bench`: what the entry guards of
 * C56 (sql/any-writer.md) cost writers. Two copies of the benchmark's data set
 * (bench/large-dataset.sql, 20 000 entries), one with the guard triggers
 * (`*_0_guarded_*`) disabled, and the same statements on both, alternated
 * statement by statement, each in a transaction rolled back: a translation's
 * title updated, a translation inserted, an entry's status updated (one row
 * each, median of 41), and 10 000 entries inserted then 10 000 translations
 * of them (one statement each, median of 5). Without the guards the search
 * rows of a new translation find no guard to read their state from: the
 * difference is what the guards cost, no less.
 *
 * Target (the C56 issue's): the guards add at most 10% to each.
 * DATABASE_URL: the server (default postgres://postgres@127.0.0.1:5432/postgres).
 * Writes bench/guards-last-run.md.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { ensureBenchDatabase } from './dataset'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SIZE = 20_000
const SINGLE_ROWS = 41
const BULK_ROUNDS = 5

/** Thrown to roll a measured write back. */
class Rollback extends Error {}

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

/** EXPLAIN ANALYZE's execution time of `statement` (triggers included), after `before`, all rolled back. Trusted text: this file's own. */
async function measured(sql: Sql, statement: string, before = ''): Promise<number> {
  let ms = 0
  await sql
    .begin(async (tx) => {
      await tx`insert into languages (code, name) values ('xx', 'Bench') on conflict do nothing`
      if (before) await tx.unsafe(before)
      const plan = await tx.unsafe(`explain (analyze, timing off) ${statement}`)
      ms = Number(/Execution Time: ([\d.]+)/.exec(plan.map((row) => row['QUERY PLAN']).join('\n'))![1])
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
  const { url } = await ensureBenchDatabase(admin, SERVER, SIZE)
  const name = new URL(url).pathname.slice(1)
  const unguarded = `${name}_unguarded`
  await admin.unsafe(`drop database if exists ${unguarded} with (force)`)
  await admin.unsafe(`create database ${unguarded} template ${name}`)
  const guardedDb = connectDatabase(url, { max: 1 })
  const unguardedDb = connectDatabase(Object.assign(new URL(url), { pathname: `/${unguarded}` }).toString(), { max: 1 })
  dbs.push(guardedDb, unguardedDb)
  for (const [table, trigger] of (await unguardedDb<{ table: string; trigger: string }[]>`select c.relname as table, t.tgname as trigger from pg_trigger t join pg_class c on c.oid = t.tgrelid where t.tgname like '%\\_0\\_guarded\\_%'`).map((row) => [row.table, row.trigger])) {
    await unguardedDb.unsafe(`alter table ${table} disable trigger ${trigger}`)
  }
  const [{ max }] = await guardedDb<{ max: number }[]>`select max(id)::int8 as max from entries where status = 'published'`
  const ids = Array.from({ length: SINGLE_ROWS }, (_, i) => 1 + Math.floor(((i + 0.5) * max) / SINGLE_ROWS))
  const cases: [string, (id: number) => [string, string?], number][] = [
    ['update of a translation\'s title', (id) => [`update entry_translations set title = title || ' revised' where entry_id = ${id} and language_code = 'en'`], SINGLE_ROWS],
    ['insert of a translation', (id) => [`insert into entry_translations (entry_id, language_code, title, slug, excerpt) values (${id}, 'xx', 'Bench title', 'bench-${id}', 'Bench excerpt')`], SINGLE_ROWS],
    ['update of an entry\'s status (published → draft)', (id) => [`update entries set status = 'draft' where id = ${id}`], SINGLE_ROWS],
    ['10 000 entries inserted (one statement)', () => [`insert into entries (content_type_id, status, published_at) select (select id from content_types where slug = 'post'), 'published', now() - interval '1 minute' * g from generate_series(1, 10000) g`], BULK_ROUNDS],
    [
      '10 000 translations of new entries inserted (one statement)',
      () => [
        `insert into entry_translations (entry_id, language_code, title, slug, excerpt) select id, 'xx', 'Bench title ' || id, 'bench-' || id, 'Bench excerpt' from entries where id > ${max}`,
        `insert into entries (id, content_type_id, status, published_at) select ${max} + g, (select id from content_types where slug = 'post'), 'published', now() - interval '1 minute' * g from generate_series(1, 10000) g`,
      ],
      BULK_ROUNDS,
    ],
  ]
  say(`# What the entry guards cost writers (C56), ${SIZE.toLocaleString('en')} entries`)
  say()
  say('| statement | with guards (ms) | guards disabled (ms) | ratio | target |')
  say('|---|---:|---:|---:|---|')
  for (const [caseName, statement, runs] of cases) {
    const withGuards: number[] = []
    const without: number[] = []
    for (let run = 0; run < runs; run++) {
      const [text, before] = statement(ids[run % ids.length]!)
      // Alternated: the machine's noise falls on both alike.
      withGuards.push(await measured(guardedDb, text, before))
      without.push(await measured(unguardedDb, text, before))
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    const ratio = median(withGuards) / median(without)
    say(`| ${caseName} | ${median(withGuards).toFixed(3)} | ${median(without).toFixed(3)} | ${ratio.toFixed(3)} | ≤ 1.10: ${ratio <= 1.1 ? 'met' : 'missed'} |`)
  }
  await writeFile(join(import.meta.dir, 'guards-last-run.md'), `${lines.join('\n')}\n`)
  await admin.unsafe(`drop database if exists ${unguarded} with (force)`).catch(() => {})
} finally {
  await Promise.all(dbs.map((db) => db.end()))
  await admin.end()
}
