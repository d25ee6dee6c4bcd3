/**
 * `bun bench/explain-terms.ts`: EXPLAIN (ANALYZE, BUFFERS) of a term list
 * (C46), page 1 and a deep page, with and without `type`, prepared once as the
 * service prepares it. DATABASE_URL: the database (required); EXPLAIN_TAXONOMY
 * (default tag) and EXPLAIN_TYPE (default post); EXPLAIN_PLAN=1 prints the plans.
 */
import { loadConfig } from '../src/config'
import { openReadPool } from '../src/db/connect'
import { termListStatement } from '../src/discovery/statements'
import { explainPrepared } from './explain-list'

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
if (!config.databaseUrl) throw new Error('DATABASE_URL is required')
const taxonomy = process.env.EXPLAIN_TAXONOMY ?? 'tag'
const type = process.env.EXPLAIN_TYPE ?? 'post'
// One connection: the prepared statements live on it.
const db = openReadPool(config.databaseUrl, { ...config, databasePoolMax: 1 })
const options = { taxonomy, countByScan: [], limit: 20, timeoutMs: 60_000, heavy: false }
for (const [name, statement] of [
  [`terms of ${taxonomy}, type ${type}, page 1`, termListStatement(db, { ...options, type, offset: 0 })],
  [`terms of ${taxonomy}, every type, page 1`, termListStatement(db, { ...options, type: null, offset: 0 })],
  [`terms of ${taxonomy}, type ${type}, page 400`, termListStatement(db, { ...options, type, offset: 7980 })],
] as const) {
  const { planningMs, executionMs, plan } = await explainPrepared(db, statement, 5, { timing: false })
  console.log(`\n${name}: planning ${planningMs} ms, execution ${executionMs} ms (medians of 5)`)
  if (process.env.EXPLAIN_PLAN) console.log(plan.join('\n'))
}
await db.end()
