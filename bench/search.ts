/**
 * `bun run bench:search`, part of `bun run bench`: search at a million entries
 * (C42, C55). It builds once, and then reuses, `vitrine_bench_search_<size>`
 * (bench/search-dataset.sql: a long-tailed vocabulary; bench/search-dataset.ts
 * builds it at the schema before C55 and migrates it), finds in a sample the
 * words carried by about 1% and 10% of the entries, and prints, for each
 * case, the statement's planning and execution time as the service runs it
 * (prepared once: a generic plan; `EXPLAIN (ANALYZE, BUFFERS)` untimed per
 * node, median of 7, uncached: the service's cache is not involved), the
 * matches it counted, and the plan of the slowest case. Then the writers'
 * cost: a single-row update of a translation's title and of an entry's
 * status, and a single-row insert of a translation, each in a transaction
 * rolled back (median of 21 statements, on entries spread over the set).
 *
 * Targets (C55): a word in 1% of the entries ≤ 20 ms, in 10% ≤ 50 ms, a
 * 3-letter prefix ≤ 50 ms; writers pay ≤ 1 ms more per statement (compare
 * with a run at the commit before the search documents).
 *
 * BENCH_SEARCH_SIZE (default 1000000, ≥ 1000): the number of entries.
 * DATABASE_URL: the server (default postgres://postgres@127.0.0.1:5432/postgres);
 * only `vitrine_bench_search_<size>` is created or dropped there.
 * BENCH_SEARCH_MIGRATE=0: measure the database as it is, without applying
 * pending migrations (a run of the code before them).
 * Writes bench/search-last-run.md.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { connectDatabase, openReadPool, type Sql } from '../src/db/connect'
import { listStatement } from '../src/content/list-statement'
import { explainPrepared } from './explain-list'
import { ensureSearchDatabase } from './search-dataset'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SIZE = Number(process.env.BENCH_SEARCH_SIZE ?? 1_000_000)
const MIGRATE = process.env.BENCH_SEARCH_MIGRATE !== '0'
const RUNS = 7

/** Thrown to roll a measured write back. */
class Rollback extends Error {}
const WRITES = 21

interface Case {
  name: string
  search: string
  target: number | null
}

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

const admin = connectDatabase(SERVER, { max: 1 })
try {
  const built = await ensureSearchDatabase(admin, SERVER, SIZE, { migrateAll: MIGRATE })
  say(`# Search at ${SIZE.toLocaleString('en')} entries`)
  say()
  say(`Database: ${new URL(built.url).pathname.slice(1)}, ${(built.bytes / 2 ** 30).toFixed(2)} GiB, ${built.how}` + (built.migrated.length ? `; migrated ${built.migrated.join(', ')} in ${(built.migrateMs / 1000).toFixed(1)} s` : ''))
  const config = loadConfig({ ...process.env, DATABASE_URL: built.url, LOG_LEVEL: 'warn' })
  // One connection: the prepared statements live on it.
  const db = openReadPool(built.url, { ...config, databasePoolMax: 1 })
  const writer = connectDatabase(built.url, { max: 1 })
  try {
    const cases = await pickCases(writer)
    say()
    say('| case | search | matches | planning ms | execution ms | target |')
    say('|---|---|---|---|---|---|')
    let slowest = { ms: -1, plan: [] as string[], name: '' }
    for (const { name, search, target } of cases) {
      for (const order of ['relevance', 'date'] as const) {
        const options = { type: 'post', lang: undefined, limit: 20, start: { offset: 0 }, highlights: true, filters: { terms: [], author: null, search, order } }
        const [{ total }] = await listStatement(db, options)
        const { planningMs, executionMs, plan } = await explainPrepared(db, listStatement(db, options), RUNS, { timing: false })
        const met = target === null ? '' : executionMs <= target ? `≤ ${target} ms: met` : `≤ ${target} ms: missed`
        say(`| ${name}, by ${order} | \`${search}\` | ${total.toLocaleString('en')} | ${planningMs.toFixed(2)} | ${executionMs.toFixed(1)} | ${order === 'relevance' ? met : ''} |`)
        if (executionMs > slowest.ms) slowest = { ms: executionMs, plan, name: `${name}, by ${order}` }
      }
    }
    say()
    say(`Writers (median of ${WRITES} single-row statements, each rolled back):`)
    say()
    for (const [name, ms] of await writerCosts(writer)) say(`- ${name}: ${ms.toFixed(3)} ms`)
    say()
    say(`The plan of the slowest case (${slowest.name}):`)
    say()
    say('```')
    for (const line of slowest.plan) say(line)
    say('```')
  } finally {
    await db.end()
    await writer.end()
  }
  await writeFile(join(import.meta.dir, 'search-last-run.md'), `${lines.join('\n')}\n`)
} finally {
  await admin.end()
}

/** The words of about 1% and 10% of the entries, from a sample of 1%, and a 3-letter prefix. */
async function pickCases(sql: Sql): Promise<Case[]> {
  const words = await sql<{ word: string; share: number }[]>`
    with shares as (
      select s.word, s.ndoc::float8 / (select count(*) from entry_translations where entry_id % 100 = 0) as share
      from ts_stat('select to_tsvector(''english'', title || '' '' || excerpt || '' '' || body) from entry_translations where entry_id % 100 = 0') s
      where length(s.word) >= 4
    )
    (select word, share from shares order by abs(share - 0.01), word limit 1)
    union all
    (select word, share from shares order by abs(share - 0.10), word limit 1)
  `
  const [one, ten] = words
  // A word's first three letters, followed by a space: the words it begins, as one would type them.
  const prefix = one!.word.slice(0, 3)
  return [
    { name: `a word in ${(one!.share * 100).toFixed(1)}% (sampled)`, search: `${one!.word} `, target: 20 },
    { name: `a word in ${(ten!.share * 100).toFixed(1)}% (sampled)`, search: `${ten!.word} `, target: 50 },
    { name: 'a 3-letter prefix', search: prefix, target: 50 },
    // Two words: the GIN index of search_documents, not the postings (sql/search-structure.md).
    { name: 'both words', search: `${one!.word} ${ten!.word} `, target: null },
  ]
}

/** Milliseconds of single-row writes (EXPLAIN ANALYZE's execution time, triggers included), each rolled back. */
async function writerCosts(sql: Sql): Promise<[string, number][]> {
  const [{ max }] = await sql<{ max: number }[]>`select max(entry_id)::int8 as max from entry_translations`
  const ids = Array.from({ length: WRITES }, (_, i) => 1 + Math.floor(((i + 0.5) * Number(max)) / WRITES))
  const statements: [string, (id: number) => string][] = [
    ['update of a translation\'s title', (id) => `update entry_translations set title = title || ' revised' where entry_id = ${id} and language_code = 'en'`],
    ['update of an entry\'s status (published → draft)', (id) => `update entries set status = 'draft' where id = ${id}`],
    ['insert of a translation (fr)', (id) => `insert into entry_translations (entry_id, language_code, title, slug, excerpt, body) select entry_id, 'fr', title, slug || '-fr', excerpt, body from entry_translations where entry_id = ${id} and language_code = 'en'`],
  ]
  const results: [string, number][] = []
  for (const [name, statement] of statements) {
    const times: number[] = []
    for (const id of ids) {
      await sql
        .begin(async (tx) => {
          // The French translation's language, rolled back with it. Trusted text: our statements and whole numbers.
          await tx`insert into languages (code, name) values ('fr', 'Français') on conflict do nothing`
          const plan = await tx.unsafe(`explain (analyze, timing off) ${statement(id)}`)
          const text = plan.map((row) => row['QUERY PLAN']).join('\n')
          times.push(Number(/Execution Time: ([\d.]+)/.exec(text)![1]))
          throw new Rollback()
        })
        .catch((error) => {
          if (!(error instanceof Rollback)) throw error
        })
    }
    times.sort((a, b) => a - b)
    results.push([name, times[Math.floor(times.length / 2)]!])
  }
  return results
}

