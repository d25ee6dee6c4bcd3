/**
 * `bun bench/explain-list.ts`: EXPLAIN (ANALYZE, BUFFERS) of the list and slug
 * statements as the service runs them: prepared once on a connection of the
 * read pool's settings (a generic plan), then executed. Prints the median
 * planning and execution times of 5 runs and the plan of the last one.
 *
 * DATABASE_URL: the database to explain on (required). EXPLAIN_TYPE (default post).
 */
import type { PendingQuery, Row } from 'postgres'
import { loadConfig } from '../src/config'
import { openReadPool, type Sql } from '../src/db/connect'
import { decodeCursor, encodeCursor } from '../src/content/cursor'
import { findStatement } from '../src/content/entry-statement'
import { listStatement } from '../src/content/list-statement'

/**
 * The planning and execution milliseconds (medians of `runs`) and the last plan of a statement prepared once.
 * `timing: false` leaves out the clock reads per row of every node, which cost more than the work in
 * statements that pass thousands of rows (a term list: 99 ms timed, 12 ms untimed).
 */
export async function explainPrepared(db: Sql, statement: PendingQuery<any>, runs = 5, { timing = true } = {}): Promise<{ planningMs: number; executionMs: number; plan: string[] }> {
  const query = statement as unknown as { describe(): Promise<{ types: number[] }>; string: string; parameters: unknown[] }
  const { types } = await query.describe()
  const typeNames = await Promise.all(types.map(async (oid) => (await db`select ${oid}::oid::regtype::text as name`)[0]!.name as string))
  const name = `explain_${Math.random().toString(36).slice(2)}`
  await db.unsafe(`prepare ${name}${typeNames.length ? `(${typeNames.join(', ')})` : ''} as ${query.string}`)
  const planning: number[] = []
  const execution: number[] = []
  let plan: string[] = []
  for (let run = 0; run < runs; run++) {
    // EXPLAIN EXECUTE takes no bound parameters: the values go in as literals (the benchmark's own).
    const literals = query.parameters.map((value, index) => `${value === null ? 'null' : `'${String(value).replaceAll("'", "''")}'`}::${typeNames[index]}`).join(', ')
    const rows = await db.unsafe(`explain (analyze, buffers, timing ${timing ? 'on' : 'off'}) execute ${name}${literals ? `(${literals})` : ''}`)
    plan = rows.map((row) => row['QUERY PLAN'] as string)
    planning.push(Number(/Planning Time: ([\d.]+)/.exec(plan.join('\n'))?.[1] ?? 0))
    execution.push(Number(/Execution Time: ([\d.]+)/.exec(plan.join('\n'))?.[1]))
  }
  await db.unsafe(`deallocate ${name}`)
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  return { planningMs: median(planning), executionMs: median(execution), plan }
}

if (import.meta.main) {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required')
  const type = process.env.EXPLAIN_TYPE ?? 'post'
  // One connection: the prepared statements live on it.
  const db = openReadPool(config.databaseUrl, { ...config, databasePoolMax: 1 })
  const live = db`e.content_type_id = (select id from content_types where slug = ${type}) and e.status = 'published' and (e.published_at is null or e.published_at <= now())`
  const [{ total }] = await db`select count(*)::int as total from entries e where ${live}`
  const lastOffset = Math.max(0, Math.ceil(total / 20) - 1) * 20
  // The entry before the last page: where the cursor of the last page continues.
  const [before] = await db`select extract(epoch from e.published_at)::text as position, e.id from entries e where ${live} order by e.published_at desc nulls last, e.id desc offset ${Math.max(0, lastOffset - 1)} limit 1`
  const after = decodeCursor(encodeCursor(2, before!.position, before!.id)).position
  // And one halfway down the dated range: a cursor page deep among dated entries.
  const [middle] = await db`select extract(epoch from e.published_at)::text as position, e.id from entries e where ${live} and e.published_at is not null order by e.published_at desc, e.id desc offset ${Math.floor(total / 2)} limit 1`
  const halfway = middle ? decodeCursor(encodeCursor(2, middle.position, middle.id)).position : after
  const cases: [string, PendingQuery<any>][] = [
    ['list page 1', listStatement(db, { type, lang: undefined, limit: 20, start: { offset: 0 } })],
    ['list last page by page', listStatement(db, { type, lang: undefined, limit: 20, start: { offset: lastOffset } })],
    ['list last page by cursor', listStatement(db, { type, lang: undefined, limit: 20, start: { after } })],
    ['list page by cursor halfway down the dated entries', listStatement(db, { type, lang: undefined, limit: 20, start: { after: halfway } })],
    ['slug', findStatement(db, { type, lang: undefined, slug: 'entry-1004' })],
  ]
  for (const [name, statement] of cases) {
    const { planningMs, executionMs, plan } = await explainPrepared(db, statement)
    console.log(`${name}: planning ${planningMs} ms, execution ${executionMs} ms`)
    if (process.env.EXPLAIN_VERBOSE) console.log(plan.join('\n'))
  }
  await db.end()
}
