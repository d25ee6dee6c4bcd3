/**
 * `bun bench/explain-sync.ts`: EXPLAIN (ANALYZE, BUFFERS) of the sync statement
 * (C48) as the service runs it (prepared once, a generic plan): a first page,
 * and the first delta page after 10 and after 10 000 changes of the type.
 * WRITES to the database (it makes the changes): give it a copy, never the
 * benchmark's own (`create database x template vitrine_bench_100000`).
 *
 * DATABASE_URL: the database (required). EXPLAIN_TYPE (default post).
 */
import { loadConfig } from '../src/config'
import { connectDatabase, openReadPool } from '../src/db/connect'
import { readSyncPage, syncStatement } from '../src/changes/sync-statement'
import { explainPrepared } from './explain-list'

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
if (!config.databaseUrl) throw new Error('DATABASE_URL is required')
const type = process.env.EXPLAIN_TYPE ?? 'post'
const db = openReadPool(config.databaseUrl, { ...config, databasePoolMax: 1 })
const writer = connectDatabase(config.databaseUrl, { max: 1 })
const options = { type, lang: undefined, afterId: 0, model: null, timeoutMs: 60_000 }
const [{ live }] = await db`select count(*)::int as live from entries e join content_types ct on ct.id = e.content_type_id where ct.slug = ${type} and e.status = 'published'`
console.log(`${type}: ${live} published entries`)
for (const perPage of [100, 1000]) {
  const { executionMs } = await explainPrepared(db, syncStatement(db, { ...options, since: null, limit: perPage }))
  console.log(`first sync, page 1 of ${perPage}: execution ${executionMs} ms`)
}
for (const changes of [10, 10_000]) {
  const { mark } = await readSyncPage(db, { ...options, since: null, limit: 1 })
  await writer`
    update entry_translations set title = title
    where entry_id in (
      select e.id from entries e join content_types ct on ct.id = e.content_type_id
      where ct.slug = ${type} and e.status = 'published' and e.published_at <= now()
      order by random()
      limit ${changes}
    )
  `
  for (const perPage of [100, 1000]) {
    const { executionMs, plan } = await explainPrepared(db, syncStatement(db, { ...options, since: mark, limit: perPage }))
    const buffers = plan.find((line) => line.includes('Buffers'))?.trim()
    console.log(`delta after ${changes} changes, page 1 of ${perPage}: execution ${executionMs} ms (${buffers})`)
    if (process.env.EXPLAIN_VERBOSE) console.log(plan.join('\n'))
  }
  const page = await readSyncPage(db, { ...options, since: mark, limit: 100_000 })
  console.log(`  the delta holds ${page.rows.length} entries, ${page.deleted.length} deleted`)
}
await writer.end()
await db.end()
