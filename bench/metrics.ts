/**
 * The metrics half of `bun run bench` (issue 33, C53): the warm hit path with
 * METRICS_PORT set (every request records one histogram observation and one
 * counter) against the same service without it, alternated in one run
 * (5 pairs of runs; the median of each pair's ratio), target ≥ 0.97; the same in process (the app's
 * fetch alone, no HTTP: the recording's own cost, which a loaded machine's
 * noise cannot hide; the median ratio of 41 alternated pairs); and what a scrape of a busy
 * service takes (one process, and WORKERS=2 gathered over IPC), target ≤ 10 ms.
 * Runs on a demo database of its own, made and dropped here (DATABASE_URL's
 * server, or the embedded one).
 */
import { connectDatabase } from '../src/db/connect'
import { freePort } from '../src/db/embedded'
import { migrate } from '../src/db/migrate'
import { seedDemo } from '../src/demo/seed-demo'
import { recordMetrics } from '../src/metrics/families'
import { cachedTestApp } from '../test/support/cached-app'
import { load, LOAD_TOOL, median, readSeconds } from './load'
import { startBenchService, type BenchService } from './service'
import { setUpBench } from './setup'

const SECONDS = readSeconds(process.env.BENCH_SECONDS)
const ROUNDS = 5
const IN_PROCESS_ROUNDS = 41
const IN_PROCESS_REQUESTS = 5_000
const { target, admin, close } = await setUpBench()
const name = `vitrine_metrics_bench_${process.pid}`
const databaseUrl = Object.assign(new URL(target.url), { pathname: `/${name}` }).toString()
const services: BenchService[] = []

try {
  await admin.unsafe(`create database ${name}`)
  const seeding = connectDatabase(databaseUrl, { max: 1 })
  await migrate(seeding)
  await seedDemo(seeding)
  await seeding.end()

  // Ready when it answers from memory: the change listener is up.
  const warm = async (base: string) => (await fetch(`${base}/api/v1/content/post`)).headers.get('x-cache') === 'HIT'
  const off = await start({}, warm)
  const metricsPort = await freePort()
  const on = await start({ METRICS_PORT: String(metricsPort) }, warm)
  const list = (await (await fetch(`${off.base}/api/v1/content/post`)).json()) as { data: { slug: string }[] }
  const cases = [
    ['list page 1', '/api/v1/content/post'],
    ['single entry by slug', `/api/v1/content/post/${list.data[0]!.slug}`],
  ] as const

  console.log(`\n## Metrics on ÷ off, warm hit path (${LOAD_TOOL}, ${SECONDS / 2} s × ${ROUNDS} rounds each, alternated; medians, and the median of each pair's ratio)\n`)
  console.log('| case | metrics off (req/s) | metrics on (req/s) | on ÷ off |')
  console.log('| --- | ---: | ---: | ---: |')
  for (const [label, path] of cases) {
    const urls = [off.base + path, on.base + path]
    for (const url of urls) await load(LOAD_TOOL, url, 1)
    const runs: number[][] = [[], []]
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first: the machine's drift hits both alike.
      const order = round % 2 ? [1, 0] : [0, 1]
      for (const index of order) {
        const measure = await load(LOAD_TOOL, urls[index]!, Math.max(1, Math.ceil(SECONDS / 2)))
        if (measure.errors) throw new Error(`${measure.errors} requests failed on ${urls[index]}`)
        runs[index]!.push(measure.rps)
      }
    }
    report(label, runs)
  }

  console.log(`\n## Metrics on ÷ off, warm hit path in process (app.fetch, ${IN_PROCESS_REQUESTS} requests × ${IN_PROCESS_ROUNDS} rounds each, alternated; medians, and the median of each pair's ratio)\n`)
  console.log('| case | metrics off (req/s) | metrics on (req/s) | on ÷ off |')
  console.log('| --- | ---: | ---: | ---: |')
  const apps = [await cachedTestApp(databaseUrl, { LOG_LEVEL: 'warn' }), await cachedTestApp(databaseUrl, { LOG_LEVEL: 'warn', METRICS_PORT: '9464' })]
  for (const [label, path] of cases) {
    const runs: number[][] = [[], []]
    for (let round = 0; round < IN_PROCESS_ROUNDS; round++) {
      for (const index of round % 2 ? [1, 0] : [0, 1]) {
        recordMetrics(index === 1)
        runs[index]!.push(await requestsPerSecond(apps[index]!.app, `http://localhost${path}`))
      }
    }
    report(label, runs)
  }
  for (const app of apps) await app.close()

  const workersPort = await freePort()
  const workers = await start({ METRICS_PORT: String(workersPort), WORKERS: '2' }, warm)
  console.log(`\n## A scrape of a busy service (while ${LOAD_TOOL} drives its warm list page)\n`)
  console.log('| service | scrapes | median (ms) | p99 (ms) | bytes |')
  console.log('| --- | ---: | ---: | ---: | ---: |')
  for (const [label, service, port] of [['one process', on, metricsPort], ['WORKERS=2 (gathered over IPC)', workers, workersPort]] as const) {
    const busy = load(LOAD_TOOL, `${service.base}/api/v1/content/post`, Math.max(2, SECONDS))
    await Bun.sleep(500)
    const times: number[] = []
    let bytes = 0
    const until = performance.now() + (Math.max(2, SECONDS) - 1) * 1000
    while (performance.now() < until) {
      const startedAt = performance.now()
      const response = await fetch(`http://127.0.0.1:${port}/metrics`)
      bytes = (await response.arrayBuffer()).byteLength
      times.push(performance.now() - startedAt)
      await Bun.sleep(50)
    }
    await busy
    times.sort((a, b) => a - b)
    console.log(`| ${label} | ${times.length} | ${median(times).toFixed(2)} | ${times[Math.floor(times.length * 0.99)]!.toFixed(2)} | ${bytes} |`)
  }
} finally {
  for (const service of services) {
    service.process.kill('SIGTERM')
    await service.process.exited
  }
  await admin.unsafe(`drop database if exists ${name}`).catch(() => {})
  await close()
}

async function start(env: Record<string, string>, ready: (base: string) => Promise<boolean>): Promise<BenchService> {
  const service = await startBenchService({ databaseUrl, env, ready })
  services.push(service)
  return service
}

/** Hits answered by `app.fetch` in a row, per second (the first request warms the answer). */
async function requestsPerSecond(app: { fetch(request: Request): Response | Promise<Response> }, url: string): Promise<number> {
  const first = await app.fetch(new Request(url))
  if (first.status !== 200 || first.headers.get('x-cache') !== 'HIT' && (await app.fetch(new Request(url))).headers.get('x-cache') !== 'HIT') throw new Error(`${url} is not a warm hit`)
  const startedAt = performance.now()
  for (let index = 0; index < IN_PROCESS_REQUESTS; index++) await app.fetch(new Request(url))
  return IN_PROCESS_REQUESTS / ((performance.now() - startedAt) / 1000)
}

/** One row: each side's median, and the median of the pairs' ratios (runs side by side share the machine's drift). */
function report(label: string, [off, on]: number[][]): void {
  const ratios = off!.map((offRps, round) => on![round]! / offRps)
  console.log(`| ${label} | ${median(off!).toFixed(0)} | ${median(on!).toFixed(0)} | ${median(ratios).toFixed(3)} |`)
}
