/**
 * `bun bench/explain-terms.ts`: EXPLAIN (ANALYZE, BUFFERS) of a term list
 * (C46), page 1 and a deep page, with and without `type`, prepared once as the
 * service prepares it: the statement the service sends (the walk by name that
 * stops when the page is full, meta.total from term_list_carried, migration
 * 0007) against the one it sends while a type is drifted (every term's kept
 * rows summed: the statement before 0007), alternating, round by round, on one
 * connection: the machine drifts. DATABASE_URL: the database (required);
 * with EXPLAIN_TERMS_SIZE (e.g. 1000000, the target's), a server on which
 * `vitrine_bench_terms_<size>` is built or reused (bench/dataset.ts with
 * `manyTerms`: that many entries, 10 000 tags; 1M takes about 7 minutes of
 * both cores) and measured; EXPLAIN_TAXONOMY (default tag),
 * EXPLAIN_TYPE (default post), EXPLAIN_ROUNDS (default 5); EXPLAIN_PLAN=1
 * prints the last plans.
 */
import type { PendingQuery } from 'postgres'
import { loadConfig } from '../src/config'
import { connectDatabase, openReadPool } from '../src/db/connect'
import { summedTermListStatement, termListStatement, type TermListOptions } from '../src/discovery/statements'
import { ensureBenchDatabase } from './dataset'
import { explainPrepared } from './explain-list'

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
if (!config.databaseUrl) throw new Error('DATABASE_URL is required')
let url = config.databaseUrl
if (process.env.EXPLAIN_TERMS_SIZE) {
  const admin = connectDatabase(url, { max: 1 })
  url = (await ensureBenchDatabase(admin, url, Number(process.env.EXPLAIN_TERMS_SIZE), { manyTerms: true })).url
  await admin.end()
}
const taxonomy = process.env.EXPLAIN_TAXONOMY ?? 'tag'
const type = process.env.EXPLAIN_TYPE ?? 'post'
const rounds = Number(process.env.EXPLAIN_ROUNDS ?? 5)
// One connection: the prepared statements live on it.
const db = openReadPool(url, { ...config, databasePoolMax: 1 })
const options: TermListOptions = { taxonomy, type, countByScan: [], limit: 20, offset: 0, timeoutMs: 60_000, heavy: false }
const cases: [string, TermListOptions][] = [
  [`type ${type}, page 1`, { ...options }],
  [`every type, page 1`, { ...options, type: null }],
  [`type ${type}, page 400`, { ...options, offset: 7980 }],
  [`every type, page 400`, { ...options, type: null, offset: 7980 }],
]
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
console.log(`Terms of ${taxonomy}: execution ms, medians of ${rounds} rounds alternating (each round: the median of 3 runs of each)`)
for (const [name, each] of cases) {
  const statements: [string, () => PendingQuery<any>][] = [
    ['walk (0007)', () => termListStatement(db, each)],
    ['summed (before 0007)', () => summedTermListStatement(db, each)],
  ]
  const times = new Map<string, number[]>(statements.map(([label]) => [label, []]))
  const buffers = new Map<string, string>()
  for (let round = 0; round < rounds; round++) {
    for (const [label, statement] of round % 2 === 0 ? statements : [...statements].reverse()) {
      const { executionMs, plan } = await explainPrepared(db, statement(), 3, { timing: false })
      times.get(label)!.push(executionMs)
      buffers.set(label, /Buffers: (.*)/.exec(plan.join('\n'))?.[1] ?? '')
      if (process.env.EXPLAIN_PLAN && round === rounds - 1) console.log(`\n${name}, ${label}:\n${plan.join('\n')}`)
    }
  }
  console.log(`${name}: ${statements.map(([label]) => `${label} ${median(times.get(label)!).toFixed(1)} ms (${times.get(label)!.map((ms) => ms.toFixed(1)).join(' ')}; buffers ${buffers.get(label)})`).join(' | ')}`)
}
await db.end()
