/**
 * `bun run bench:cpu-ab DIR_A DIR_B [PATH]`: two checkouts of the service side by side on
 * `vitrine_bench_100000`, alternated in one run (A, B, then B, A, … for BENCH_ROUNDS rounds, wrk at 32
 * connections): requests a second, and CPU per request of the service's process (every thread) and
 * of every PostgreSQL process, read from `/proc/<pid>/schedstat` around each measurement. On this
 * 2-core machine throughput moves by ±10% from run to run; CPU per request moves far less, and says
 * which side of the database and the process a change moved (issue 45). Linux only.
 * PATH (default the uncached single entry) is asked of both; BENCH_ENV (JSON, default
 * `{"CACHE":"off"}`) is each service's environment; BENCH_SECONDS (default 3) each measurement;
 * DATABASE_URL the server (unset: the embedded PostgreSQL).
 * @example git worktree add /tmp/before HEAD~1 && ln -s $PWD/node_modules /tmp/before/ && bun run bench:cpu-ab /tmp/before .
 */
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ensureBenchDatabase } from './dataset'
import { load, LOAD_TOOL, median, readRounds } from './load'
import { startBenchService, type BenchService } from './service'
import { setUpBench } from './setup'

const [first, second, path = '/api/v1/content/post/entree-1004?lang=fr'] = process.argv.slice(2)
if (!first || !second) {
  console.error('Usage: bun run bench:cpu-ab DIR_A DIR_B [PATH]')
  process.exit(2)
}
const SECONDS = Math.max(1, Number(process.env.BENCH_SECONDS ?? 3))
const ROUNDS = readRounds(process.env.BENCH_ROUNDS, 6)
const ENV = JSON.parse(process.env.BENCH_ENV ?? '{"CACHE":"off"}') as Record<string, string>

/** Nanoseconds on a CPU of a process, every thread of it; 0 once it is gone. */
function cpuOf(pid: number): number {
  let total = 0
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
  } catch {
    // A thread that ended between the listing and the read.
  }
  return total
}

/** Nanoseconds on a CPU of every PostgreSQL process (backends, and the server's own). */
function postgresCpu(): number {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) total += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // A process that ended meanwhile.
    }
  }
  return total
}

const { admin, target, close } = await setUpBench()
const services: { name: string; service: BenchService }[] = []
try {
  const database = await ensureBenchDatabase(admin, target.url, 100_000)
  for (const directory of [first, second]) services.push({ name: directory, service: await startBenchService({ databaseUrl: database.url, directory: resolve(directory), env: ENV }) })
  const runs = new Map(services.map(({ name }) => [name, { rps: [] as number[], service: [] as number[], postgres: [] as number[] }]))
  for (const { service } of services) await load(LOAD_TOOL, service.base + path, 1)
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, service } of round % 2 === 0 ? services : [...services].reverse()) {
      const [process0, postgres0] = [cpuOf(service.process.pid), postgresCpu()]
      const { rps } = await load(LOAD_TOOL, service.base + path, SECONDS)
      const requests = rps * SECONDS
      const run = runs.get(name)!
      run.rps.push(rps)
      run.service.push((cpuOf(service.process.pid) - process0) / 1000 / requests)
      run.postgres.push((postgresCpu() - postgres0) / 1000 / requests)
    }
  }
  console.log(`\`${path}\`, ${LOAD_TOOL} at 32 connections, ${SECONDS} s a measurement, ${ROUNDS} rounds alternating, medians; CPU per request:\n`)
  console.log('| checkout | req/s | ÷ A | service µs | PostgreSQL µs |\n| --- | ---: | ---: | ---: | ---: |')
  const base = median(runs.get(first)!.rps)
  for (const { name } of services) {
    const run = runs.get(name)!
    console.log(`| ${name} | ${Math.round(median(run.rps))} | ${(median(run.rps) / base).toFixed(3)} | ${median(run.service).toFixed(1)} | ${median(run.postgres).toFixed(1)} |`)
  }
} finally {
  for (const { service } of services) service.process.kill('SIGTERM')
  await Promise.all(services.map(({ service }) => service.process.exited))
  await close()
}
