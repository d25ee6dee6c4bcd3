/**
 * `bun run bench:cpu-ab DIR_A DIR_B [PATH]`: two checkouts of the service side by side on
 * `vitrine_bench_100000`, alternated in one run (A, B, then B, A, … for BENCH_ROUNDS rounds, wrk at 32
 * connections): requests a second, and CPU per request of the service's process (every thread) and
 * of every PostgreSQL process, read from `/proc/<pid>/schedstat` around each measurement. On this
 * 2-core machine throughput moves by ±10% from run to run; CPU per request moves far less, and says
 * which side of the database and the process a change moved (issue 45). Linux only.
 * PATH (default the uncached single entry) is asked of both; BENCH_ENV (JSON, default
 * `{"CACHE":"off"}`) is each service's environment, BENCH_ENV_B (merged over it) the second's; BENCH_SECONDS (default 3) each measurement;
 * BENCH_WARM_UP (default 1) the seconds each service is first under load, unmeasured. The last column counts the
 * responses that were not 2xx, or failed: a side answering errors fast would look cheap.
 * DATABASE_URL the server (unset: the embedded PostgreSQL). BENCH_PIN=1 puts both services on the
 * second CPU and everything else (wrk, this script, every PostgreSQL process) on the first, for the
 * run's length (meant to keep the others off the services' CPU; in practice no steadier here: docs/benchmarks.md) (the PostgreSQL
 * processes are given both CPUs back at the end).
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
/** The second service's environment: BENCH_ENV_B, merged over BENCH_ENV (one checkout, two settings: `bun run bench:cpu-ab . .`). */
const ENV_B = { ...ENV, ...(JSON.parse(process.env.BENCH_ENV_B ?? '{}') as Record<string, string>) }

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
  for (const pid of postgresPids()) {
    try {
      total += Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // A process that ended meanwhile.
    }
  }
  return total
}

/** Every PostgreSQL process of the machine. */
function postgresPids(): number[] {
  const pids: number[] = []
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) pids.push(Number(pid))
    } catch {
      // A process that ended meanwhile.
    }
  }
  return pids
}

/** Every thread of each process on these CPUs (`taskset -a`); a process that ended meanwhile is skipped. */
function pin(pids: number[], cpus: string): void {
  for (const pid of pids) Bun.spawnSync(['taskset', '-apc', cpus, String(pid)], { stdout: 'ignore', stderr: 'ignore' })
}

const PIN = process.env.BENCH_PIN === '1'

const { admin, target, close } = await setUpBench()
const services: { name: string; service: BenchService }[] = []
try {
  const database = await ensureBenchDatabase(admin, target.url, 100_000)
  for (const [index, directory] of [first, second].entries()) {
    const env = index === 0 ? ENV : ENV_B
    // The same checkout twice is told apart by its settings.
    const name = first === second ? `${directory} ${JSON.stringify(env)}` : directory
    services.push({ name, service: await startBenchService({ databaseUrl: database.url, directory: resolve(directory), env }) })
  }
  if (PIN) {
    pin([process.pid, ...postgresPids()], '0')
    pin(services.map(({ service }) => service.process.pid), '1')
  }
  const runs = new Map(services.map(({ name }) => [name, { rps: [] as number[], service: [] as number[], postgres: [] as number[], errors: 0 }]))
  for (const { service } of services) await load(LOAD_TOOL, service.base + path, Math.max(1, Number(process.env.BENCH_WARM_UP ?? 1)))
  for (let round = 0; round < ROUNDS; round++) {
    for (const { name, service } of round % 2 === 0 ? services : [...services].reverse()) {
      const [process0, postgres0] = [cpuOf(service.process.pid), postgresCpu()]
      const { rps, errors } = await load(LOAD_TOOL, service.base + path, SECONDS)
      const requests = rps * SECONDS
      const run = runs.get(name)!
      run.rps.push(rps)
      run.errors += errors
      run.service.push((cpuOf(service.process.pid) - process0) / 1000 / requests)
      run.postgres.push((postgresCpu() - postgres0) / 1000 / requests)
    }
  }
  console.log(`\`${path}\`, ${LOAD_TOOL} at 32 connections, ${SECONDS} s a measurement, ${ROUNDS} rounds alternating, medians (least–most)${PIN ? ', the services on a CPU of their own' : ''}; CPU per request:\n`)
  console.log('| checkout | req/s | ÷ A | service µs | PostgreSQL µs | errors |\n| --- | ---: | ---: | ---: | ---: | ---: |')
  const base = median(runs.get(services[0]!.name)!.rps)
  const spread = (values: number[]) => `${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`
  for (const { name } of services) {
    const run = runs.get(name)!
    console.log(`| ${name} | ${Math.round(median(run.rps))} | ${(median(run.rps) / base).toFixed(3)} | ${spread(run.service)} | ${spread(run.postgres)} | ${run.errors} |`)
  }
} finally {
  if (PIN) pin(postgresPids(), '0,1')
  for (const { service } of services) service.process.kill('SIGTERM')
  await Promise.all(services.map(({ service }) => service.process.exited))
  await close()
}
