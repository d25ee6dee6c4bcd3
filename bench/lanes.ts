/**
 * `bun run bench:lanes`, the last part of `bun run bench`: C47, fair lanes.
 * What a flood of pages deep by number (a crawler walking `?page=`) does to
 * everyone else, with the heavy lane as configured by default and without it
 * (DATABASE_HEAVY_MAX = DATABASE_POOL_MAX, an unbounded line: the service
 * before C47).
 *
 * On `vitrine_bench_100000` (bench/dataset.ts; kept between runs), it starts
 * four services: with and without the lane, each with the cache on (page 1 is
 * then answered from memory: "cached") and off ("uncached"). Each round, for
 * each of the four in turn (the order alternates between rounds), it measures
 * page 1 (`/api/v1/content/post`, wrk or autocannon; cached at 32 connections,
 * its throughput; uncached at 4, its latency: 32 uncached clients would queue
 * for the 10 connections of the pool with or without a flood) alone, then
 * again while FLOOD_CONNECTIONS loops ask random pages 1 000–20 000 of 5
 * entries (offsets 5 000–100 000) of the same service, as fast as it answers.
 * It prints medians of page 1's req/s, p50 and p99, quiet and flooded, what
 * the flood got (answers a second, 503s), and the targets: with the lane,
 * cached page-1 p99 within 2× its quiet value, uncached page-1 p99 ≤ 50 ms.
 * Written to bench/lanes-last-run.md too.
 *
 * BENCH_SECONDS (default 10): each measurement takes ceil(BENCH_SECONDS / 2) s.
 * BENCH_ROUNDS (default 3). DATABASE_URL: the server to keep the database on;
 * unset: the embedded PostgreSQL under DATA_DIR.
 *
 * Exits non-zero when a page-1 request fails: page 1 must never be refused.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ensureBenchDatabase } from './dataset'
import { CONNECTIONS, load, LOAD_TOOL, median, readRounds, readSeconds, type Measure } from './load'
import { openLane, startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZE = 100_000
const HALF = Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 2)
const ROUNDS = readRounds(process.env.BENCH_ROUNDS)
const FLOOD_CONNECTIONS = 32
const PAGE_1 = '/api/v1/content/post'
const { config, target, admin, close } = await setUpBench()
const tool = LOAD_TOOL

type Variant = 'lane, cached' | 'lane, uncached' | 'no lane, cached' | 'no lane, uncached'
const UNCACHED_CONNECTIONS = 4
const NO_LANE = openLane(config.databasePoolMax)
const VARIANTS: { name: Variant; env: Record<string, string>; connections: number }[] = [
  { name: 'no lane, cached', env: { CACHE: 'on', ...NO_LANE }, connections: CONNECTIONS },
  { name: 'lane, cached', env: { CACHE: 'on' }, connections: CONNECTIONS },
  { name: 'no lane, uncached', env: { CACHE: 'off', ...NO_LANE }, connections: UNCACHED_CONNECTIONS },
  { name: 'lane, uncached', env: { CACHE: 'off' }, connections: UNCACHED_CONNECTIONS },
]

interface FloodResult {
  answered: number
  refused: number
  failed: number
  seconds: number
}
interface Sample {
  quiet: Measure
  flooded: Measure
  flood: FloodResult
}

const services: ReturnType<typeof Bun.spawn>[] = []
const pageOneFailures: string[] = []
try {
  const database = await ensureBenchDatabase(admin, target.url, SIZE)
  const bases = {} as Record<Variant, string>
  for (const variant of VARIANTS) {
    const service = await startBenchService({ databaseUrl: database.url, env: { DATABASE_POOL_MAX: String(config.databasePoolMax), ...variant.env } })
    services.push(service.process)
    bases[variant.name] = service.base
    await load(tool, service.base + PAGE_1, 1)
  }
  const samples = Object.fromEntries(VARIANTS.map(({ name }) => [name, [] as Sample[]])) as Record<Variant, Sample[]>
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()
    for (const { name, connections } of order) {
      const sample = await measure(bases[name], connections)
      samples[name].push(sample)
      console.log(`round ${round + 1} ${name}: page 1 quiet ${describe(sample.quiet)}; flooded ${describe(sample.flooded)}; flood ${describeFlood(sample.flood)}`)
    }
  }
  const report = summarize(samples, database.how)
  console.log(`\n${report}`)
  await writeFile(join(ROOT, 'bench', 'lanes-last-run.md'), report + '\n')
} finally {
  for (const service of services) service.kill('SIGTERM')
  await Promise.all(services.map((service) => service.exited))
  await close()
}
if (pageOneFailures.length) {
  console.error(`Page-1 requests failed:\n${pageOneFailures.join('\n')}`)
  process.exit(1)
}

/** Page 1 alone, then page 1 under the flood (the flood starts first and ends after). */
async function measure(base: string, connections: number): Promise<Sample> {
  const quiet = checked(await load(tool, base + PAGE_1, HALF, {}, undefined, connections), base, 'quiet')
  const stop = { now: false }
  const flooding = flood(base, stop)
  await Bun.sleep(500)
  const flooded = checked(await load(tool, base + PAGE_1, HALF, {}, undefined, connections), base, 'flooded')
  stop.now = true
  return { quiet, flooded, flood: await flooding }
}

function checked(measure: Measure, base: string, when: string): Measure {
  if (measure.errors > 0) pageOneFailures.push(`${base}${PAGE_1} (${when}): ${measure.errors} failed`)
  return measure
}

/** FLOOD_CONNECTIONS loops asking random deep pages until told to stop; what they got. */
async function flood(base: string, stop: { now: boolean }): Promise<FloodResult> {
  const result: FloodResult = { answered: 0, refused: 0, failed: 0, seconds: 0 }
  const started = performance.now()
  await Promise.all(
    Array.from({ length: FLOOD_CONNECTIONS }, async () => {
      while (!stop.now) {
        const page = 1000 + Math.floor(Math.random() * 19_001)
        try {
          const response = await fetch(`${base}${PAGE_1}?per_page=5&page=${page}`)
          await response.arrayBuffer()
          if (response.status === 200) result.answered++
          else if (response.status === 503) result.refused++
          else result.failed++
        } catch {
          result.failed++
        }
      }
    }),
  )
  result.seconds = (performance.now() - started) / 1000
  return result
}

function describe(measure: Measure): string {
  return `${Math.round(measure.rps)} req/s, p50 ${measure.p50.toFixed(2)} ms, p99 ${measure.p99.toFixed(2)} ms`
}

function describeFlood(flood: FloodResult): string {
  return `${Math.round(flood.answered / flood.seconds)} deep pages/s answered, ${Math.round(flood.refused / flood.seconds)}/s refused (503)${flood.failed ? `, ${flood.failed} failed` : ''}`
}


function summarize(samples: Record<Variant, Sample[]>, how: string): string {
  const row = (name: Variant) => {
    const s = samples[name]
    const q = (pick: (sample: Sample) => number) => median(s.map(pick))
    const quietP99 = q((x) => x.quiet.p99)
    const floodedP99 = q((x) => x.flooded.p99)
    return `| ${name} | ${Math.round(q((x) => x.quiet.rps))} | ${q((x) => x.quiet.p50).toFixed(2)} | ${quietP99.toFixed(2)} | ${Math.round(q((x) => x.flooded.rps))} | ${q((x) => x.flooded.p50).toFixed(2)} | ${floodedP99.toFixed(2)} | ${(floodedP99 / quietP99).toFixed(1)}× | ${Math.round(q((x) => x.flood.answered / x.flood.seconds))} | ${Math.round(q((x) => x.flood.refused / x.flood.seconds))} |`
  }
  const p99 = (name: Variant, which: 'quiet' | 'flooded') => median(samples[name].map((sample) => sample[which].p99))
  const cachedRatio = p99('lane, cached', 'flooded') / p99('lane, cached', 'quiet')
  const uncached = p99('lane, uncached', 'flooded')
  return [
    `# Fair lanes (C47), ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `\`vitrine_bench_${SIZE}\` (${how}); page 1 by ${tool} (cached at ${CONNECTIONS} connections, uncached at ${UNCACHED_CONNECTIONS}), ${HALF} s a measurement; the flood: ${FLOOD_CONNECTIONS} loops of random pages 1 000–20 000 (per_page=5); ${ROUNDS} rounds alternating, medians. Lane: DATABASE_HEAVY_MAX ${config.databaseHeavyMax} of DATABASE_POOL_MAX ${config.databasePoolMax}, DATABASE_HEAVY_QUEUE ${config.databaseHeavyQueue}; no lane: DATABASE_HEAVY_MAX ${config.databasePoolMax}.`,
    '',
    '| service | quiet req/s | p50 ms | p99 ms | flooded req/s | p50 ms | p99 ms | p99 flooded ÷ quiet | deep pages/s | deep 503/s |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...VARIANTS.map(({ name }) => row(name)),
    '',
    `Target: with the lane, cached page-1 p99 under the flood within 2× quiet: ${cachedRatio.toFixed(1)}× (${cachedRatio <= 2 ? 'met' : 'missed'}).`,
    `Target: with the lane, uncached page-1 p99 under the flood ≤ 50 ms: ${uncached.toFixed(1)} ms (${uncached <= 50 ? 'met' : 'missed'}).`,
  ].join('\n')
}

