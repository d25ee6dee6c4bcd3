/**
 * `bun run bench`: builds a database of 100 000 entries, starts the service,
 * drives it over real HTTP (wrk when installed, else autocannon) at 32
 * connections, and compares each case with its ceiling: the same statement
 * sent straight through postgres.js at the same concurrency, without HTTP.
 *
 * DATABASE_URL: the server to build the `vitrine_bench` database on (it is
 * dropped and made again); unset: the embedded PostgreSQL under DATA_DIR.
 * BENCH_SECONDS (default 10, a whole number): the length of each measurement.
 *
 * Exits non-zero when a measurement fails (the load tool fails or measures
 * nothing) or when any request of a measurement failed: its numbers would
 * describe failures, not the service.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, openReadPool, type Sql } from '../src/db/connect'
import { migrate } from '../src/db/migrate'
import { findStatement } from '../src/content/entry-statement'
import { listStatement } from '../src/content/list-statement'
import { datasetSql } from './dataset'
import { MODEL_PARTS, type ModelPart } from '../src/hooks/extension'
import { CONNECTIONS, load, LOAD_TOOL, readSeconds, type Measure } from './load'
import { explainPrepared } from './explain-list'
import { openLane, startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
/** The alternating hook runs take half as long each; load tools take whole seconds. */
const HALF = Math.ceil(SECONDS / 2)
const { config, target, admin, close } = await setUpBench()

interface Case {
  name: string
  path: string
  statement: (sql: Sql) => Promise<unknown>
}

const CASES: Case[] = [
  { name: 'list page 1', path: '/api/v1/content/post', statement: (sql) => listStatement(sql, { type: 'post', lang: undefined, limit: 20, start: { offset: 0 } }) },
  { name: 'list per_page=100', path: '/api/v1/content/post?per_page=100', statement: (sql) => listStatement(sql, { type: 'post', lang: undefined, limit: 100, start: { offset: 0 } }) },
  { name: 'list page 2000', path: '/api/v1/content/post?page=2000', statement: (sql) => listStatement(sql, { type: 'post', lang: undefined, limit: 20, start: { offset: 39_980 } }) },
  { name: 'list lang=fr', path: '/api/v1/content/post?lang=fr', statement: (sql) => listStatement(sql, { type: 'post', lang: 'fr', limit: 20, start: { offset: 0 } }) },
  { name: 'single entry by slug', path: '/api/v1/content/post/entree-1004?lang=fr', statement: (sql) => findStatement(sql, { type: 'post', lang: 'fr', slug: 'entree-1004' }) },
]


const benchUrl = withDatabase(target.url, 'vitrine_bench')
interface Server {
  base: string
  pid: number
}
/** The services started; the `finally` below stops them. */
const servers: ReturnType<typeof Bun.spawn>[] = []
/** Measurements in which requests failed: reported, then the run exits 1. */
const failedRequests: string[] = []
try {
  console.log('Building vitrine_bench: 100 000 entries …')
  const started = performance.now()
  await admin.unsafe('drop database if exists vitrine_bench with (force)')
  await admin.unsafe('create database vitrine_bench')
  const sql = connectDatabase(benchUrl, { max: config.databasePoolMax })
  await migrate(sql)
  await sql.unsafe(await datasetSql(100_000))
  await sql.unsafe('vacuum analyze')
  console.log(`Built in ${((performance.now() - started) / 1000).toFixed(1)} s.\n`)

  // The ceiling and the plans go through a pool with the service's own session settings (one generic plan, no JIT).
  const reader = openReadPool(benchUrl, config)
  await explainPlans(reader)

  const lean = await startServer(join(import.meta.dir, 'no-extensions'))

  const tool = LOAD_TOOL
  console.log(`Load: ${tool}, ${CONNECTIONS} connections, ${SECONDS} s a case; ceiling: postgres.js, ${CONNECTIONS} concurrent loops, pool of ${config.databasePoolMax}.\n`)
  const rows: string[] = []
  for (const benchCase of CASES) {
    await load(tool, lean.base + benchCase.path, 2) // warm up
    resetPeakRss(lean.pid)
    const service = await load(tool, lean.base + benchCase.path, SECONDS)
    noteFailedRequests(benchCase.name, service)
    const rss = peakRssMb(lean.pid)
    const ceiling = await ceilingOf(reader, benchCase)
    rows.push(
      `| ${benchCase.name} | ${service.rps.toFixed(0)} | ${service.p50.toFixed(1)} | ${service.p99.toFixed(1)} | ${service.errors} | ${rss} | ${ceiling.toFixed(0)} | ${(service.rps / ceiling).toFixed(2)} |`,
    )
    console.log(rows.at(-1))
  }
  const table = [
    '| case | req/s | p50 ms | p99 ms | errors | peak RSS MB | ceiling stmt/s | service/ceiling |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n')
  console.log(`\n${table}\n`)

  // C28: no callback against one trivial callback (which makes the statement load each entry's model).
  // Both services stay up; their runs alternate so that drift of the machine hits both alike.
  const hooked = await startServer(join(import.meta.dir, 'extensions'))
  const hookPath = '/api/v1/content/post?per_page=100'
  await load(tool, hooked.base + hookPath, 2)
  const runs: { lean: Measure[]; hooked: Measure[] } = { lean: [], hooked: [] }
  for (let round = 0; round < 3; round++) {
    runs.lean.push(noteFailedRequests('no callback', await load(tool, lean.base + hookPath, HALF)))
    runs.hooked.push(noteFailedRequests('one trivial callback', await load(tool, hooked.base + hookPath, HALF)))
  }
  const median = (measures: Measure[], key: keyof Measure) => measures.map((m) => m[key]).sort((a, b) => a - b)[1]
  const statement = (model: readonly ModelPart[] | null): Case => ({
    name: '',
    path: '',
    statement: (db) => listStatement(db, { type: 'post', lang: undefined, limit: 100, start: { offset: 0 }, model }),
  })
  const leanCeiling = await ceilingOf(reader, statement(null))
  const modelCeiling = await ceilingOf(reader, statement(MODEL_PARTS))
  const row = (name: string, measures: Measure[], ceiling: number) =>
    `| ${name} | ${median(measures, 'rps').toFixed(0)} | ${median(measures, 'p50').toFixed(1)} | ${median(measures, 'p99').toFixed(1)} | ${ceiling.toFixed(0)} |`
  const hook = [
    '| list per_page=100 (median of 3 alternating runs) | req/s | p50 ms | p99 ms | statement alone, stmt/s |',
    '| --- | ---: | ---: | ---: | ---: |',
    row('no callback (lean statement)', runs.lean, leanCeiling),
    row('one trivial callback (statement with models)', runs.hooked, modelCeiling),
    '',
    `Hook cost: ${((1 - median(runs.hooked, 'rps') / median(runs.lean, 'rps')) * 100).toFixed(1)}% of list throughput at per_page=100;` +
      ` the statement with models alone costs ${((1 - modelCeiling / leanCeiling) * 100).toFixed(1)}% more than the lean one.`,
  ].join('\n')
  console.log(`${hook}\n`)
  await writeFile(join(ROOT, 'bench', 'last-run.md'), `${table}\n\n${hook}\n`)
  await reader.end()
  await sql.end()
} finally {
  await stopServers()
  await close()
}
if (failedRequests.length) {
  console.error(`Requests failed, so these numbers measure failures too:\n${failedRequests.join('\n')}`)
  process.exit(1)
}

function noteFailedRequests(name: string, measure: Measure): Measure {
  if (measure.errors > 0) failedRequests.push(`  ${name}: ${measure.errors} failed requests`)
  return measure
}

/** Starts the service on the bench database with the extensions of `extensionsDir`. */
async function startServer(extensionsDir: string): Promise<Server> {
  // CACHE=off: this half measures each request's statement; bench/cache.ts measures the cache.
  // The heavy lane open (C47): page 2000 at 32 connections measures its statement, not the line.
  const { base, process: server } = await startBenchService({ databaseUrl: benchUrl, env: { EXTENSIONS_DIR: extensionsDir, CACHE: 'off', ...openLane(config.databasePoolMax) } })
  servers.push(server)
  return { base, pid: server.pid }
}

async function stopServers() {
  for (const server of servers) server.kill('SIGTERM')
  await Promise.all(servers.map((server) => server.exited))
}

async function explainPlans(reader: Sql) {
  const plans: [string, Case['statement']][] = [
    ['list page 1', CASES[0].statement],
    ['list page 2000', CASES[2].statement],
    ['single entry by slug', CASES[4].statement],
  ]
  // Prepared once and executed, as the service runs them (explain-list.ts), on one connection.
  const connection = openReadPool(benchUrl, { ...config, databasePoolMax: 1 })
  for (const [name, statement] of plans) {
    const { planningMs, executionMs, plan } = await explainPrepared(connection, statement(connection) as never)
    const seqScans = plan.filter((line) => /Seq Scan on entries\b/.test(line))
    console.log(`EXPLAIN ANALYZE ${name}: ${plan[0]!.trim()}`)
    console.log(`  planning ${planningMs} ms; execution ${executionMs} ms (medians of 5)`)
    console.log(`  sequential scans of entries: ${seqScans.length}`)
  }
  await connection.end()
  console.log()
}

/** The same statement, sent by CONNECTIONS concurrent loops for SECONDS: statements a second. */
async function ceilingOf(sql: Sql, benchCase: Case): Promise<number> {
  let count = 0
  const deadline = performance.now() + SECONDS * 1000
  const loop = async () => {
    while (performance.now() < deadline) {
      await benchCase.statement(sql)
      count++
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: CONNECTIONS }, loop))
  return count / ((performance.now() - started) / 1000)
}

function resetPeakRss(pid: number) {
  try {
    require('node:fs').writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {}
}

function peakRssMb(pid: number): string {
  try {
    const status = require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8') as string
    return (Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024).toFixed(0)
  } catch {
    return '?'
  }
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}
