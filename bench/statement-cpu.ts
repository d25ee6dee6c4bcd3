/**
 * `bun run bench:statement-cpu`: PostgreSQL's CPU per execution of the single-entry statement
 * (issue 45), the service's with and without its type's next go-live (C36: the process may know it),
 * against bench/reference-server.ts's hand-written one, on `vitrine_bench_100000`. One connection
 * with generic plans and no JIT (as the service's pool), 30 rounds of 500 executions, alternated;
 * the backend's CPU read from `/proc/<pid>/schedstat` (so the server runs on this machine: Linux
 * only). Medians, in µs.
 * DATABASE_URL: the server (unset: the embedded PostgreSQL).
 */
import { readFileSync } from 'node:fs'
import { connectDatabase, type Sql } from '../src/db/connect'
import { findStatement } from '../src/content/entry-statement'
import { ensureBenchDatabase } from './dataset'
import { median } from './load'
import { entryStatement } from './reference-server'
import { setUpBench } from './setup'

const ROUNDS = 30
const EXECUTIONS = 500
const ENTRY = { type: 'post', lang: 'fr', slug: 'entree-1004' }

const { admin, target, close } = await setUpBench()
try {
  const database = await ensureBenchDatabase(admin, target.url, 100_000)
  const sql = connectDatabase(database.url, { max: 1, planOnce: true })
  try {
    const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`
    const cpu = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0])
    const statements: Record<string, (db: Sql) => PromiseLike<unknown>> = {
      'the service, reading the go-live': (db) => findStatement(db, ENTRY),
      'the service, the go-live known': (db) => findStatement(db, { ...ENTRY, readGoLive: false }),
      'the hand-written reference': (db) => entryStatement(db, ENTRY.type, ENTRY.slug, ENTRY.lang),
    }
    const times = new Map(Object.keys(statements).map((name) => [name, [] as number[]]))
    // Prepared, planned and warm before anything is measured.
    for (const statement of Object.values(statements)) for (let run = 0; run < 300; run++) await statement(sql)
    for (let round = 0; round < ROUNDS; round++) {
      const names = Object.keys(statements)
      for (const name of round % 2 === 0 ? names : names.reverse()) {
        const before = cpu()
        for (let run = 0; run < EXECUTIONS; run++) await statements[name]!(sql)
        times.get(name)!.push((cpu() - before) / 1000 / EXECUTIONS)
      }
    }
    console.log(`PostgreSQL's CPU per execution, ${ROUNDS} alternated rounds of ${EXECUTIONS}, medians:\n`)
    console.log('| statement | µs |\n| --- | ---: |')
    for (const [name, values] of times) console.log(`| ${name} | ${median(values).toFixed(1)} |`)
  } finally {
    await sql.end()
  }
} finally {
  await close()
}
