/**
 * `bun run bench` part: C52, per-client quotas. Two measurements on
 * `vitrine_bench_100000` (bench/dataset.ts; kept between runs):
 *
 * 1. The warm hit path with quotas on and no client over them
 *    (RATE_LIMIT_REQUESTS and RATE_LIMIT_HEAVY at 1 000 000 000) against
 *    quotas off: page 1 from the cache at 32 connections, the two services
 *    alternating A/B each round. Target: on ≥ 0.95 × off (req/s, medians).
 * 2. One client flooding uncached searches (CACHE=off; each a different
 *    entry's number, `search=48213`: a search the heavy lane answers in a few
 *    milliseconds, so that the flood asks far more than its quota) at 32
 *    connections while another client searches at its own pace (a search,
 *    then 250 ms): that client's p99 quiet and under the flood, with quotas on
 *    (RATE_LIMIT_HEAVY=300 a minute, 5 a second: the flood is over it once its
 *    first burst is spent, which is done before measuring; the paced client,
 *    at most 4 a second, never) and, for comparison, off. Clients are told
 *    apart by X-Forwarded-For from a trusted 127.0.0.1. Target: with quotas,
 *    flooded p99 ≤ 2× quiet. (An earlier flood searched `title`, in every
 *    entry: each search took seconds in the lane, so the flood never asked
 *    for more than its quota, and the quota could not be what kept the other
 *    client's searches fast.) The flood runs in a process of its own
 *    (bench/flood-searches.ts): 20 000 429s a second in this one would delay
 *    the very client it times.
 *
 * BENCH_SECONDS (default 10): each measurement takes ceil(BENCH_SECONDS / 2) s.
 * BENCH_ROUNDS (default 3). DATABASE_URL: the server to keep the database on;
 * unset: the embedded PostgreSQL under DATA_DIR. Written to
 * bench/quotas-last-run.md too.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ensureBenchDatabase } from './dataset'
import { CONNECTIONS, load, LOAD_TOOL, median, readRounds, readSeconds, type Measure } from './load'
import { startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZE = 100_000
const HALF = Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 2)
const ROUNDS = readRounds(process.env.BENCH_ROUNDS)
const PAGE_1 = '/api/v1/content/post'
const FLOOD_CONNECTIONS = 32
const PACE_MS = 250
/** The paced client's search: "zeppelin" is in 1% of the titles (bench/large-dataset.sql). */
const PACED_SEARCH = `${PAGE_1}?search=zeppelin&per_page=10`
const UNLIMITED = { RATE_LIMIT_REQUESTS: '1000000000', RATE_LIMIT_HEAVY: '1000000000' }
const FAIR = { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_HEAVY: '300', RATE_LIMIT_WINDOW_S: '60', TRUSTED_PROXIES: '127.0.0.1' }
const tool = LOAD_TOOL

interface Paced {
  p99: number
  answered: number
  refused: number
}
interface FloodResult {
  answered: number
  limited: number
  refused: number
  seconds: number
}

const { config, target, admin, close } = await setUpBench()
const services: ReturnType<typeof Bun.spawn>[] = []
try {
  const database = await ensureBenchDatabase(admin, target.url, SIZE)
  const start = async (env: Record<string, string>) => {
    const service = await startBenchService({ databaseUrl: database.url, env })
    services.push(service.process)
    return service.base
  }
  const hitPath = { on: await start({ CACHE: 'on', ...UNLIMITED }), off: await start({ CACHE: 'on' }) }
  const searches = { on: await start({ CACHE: 'off', ...FAIR }), off: await start({ CACHE: 'off', TRUSTED_PROXIES: '127.0.0.1' }) }
  for (const base of Object.values(hitPath)) await load(tool, base + PAGE_1, 1)
  await spendBurst(searches.on)

  const hits: Record<'on' | 'off', Measure[]> = { on: [], off: [] }
  const fairness: Record<'on' | 'off', { quiet: Paced; flooded: Paced; flood: FloodResult }[]> = { on: [], off: [] }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)
    for (const quotas of order) {
      const measure = await load(tool, hitPath[quotas] + PAGE_1, HALF)
      hits[quotas].push(measure)
      console.log(`round ${round + 1} hit path, quotas ${quotas}: ${Math.round(measure.rps)} req/s, p99 ${measure.p99.toFixed(2)} ms`)
    }
    for (const quotas of order) {
      const sample = await floodedSearches(searches[quotas])
      fairness[quotas].push(sample)
      console.log(`round ${round + 1} searches, quotas ${quotas}: quiet p99 ${sample.quiet.p99.toFixed(1)} ms; flooded p99 ${sample.flooded.p99.toFixed(1)} ms (${sample.flooded.refused} refused); flood ${describeFlood(sample.flood)}`)
    }
  }
  const report = summarize(hits, fairness, database.how)
  console.log(`\n${report}`)
  await writeFile(join(ROOT, 'bench', 'quotas-last-run.md'), report + '\n')
} finally {
  for (const service of services) service.kill('SIGTERM')
  await Promise.all(services.map((service) => service.exited))
  await close()
}

/** The paced client alone, then under the flood of another client (the flood starts first and ends after). */
async function floodedSearches(base: string) {
  const quiet = await paced(base, '192.0.2.1')
  const flooding = flood(base, '198.51.100.1')
  await Bun.sleep(500)
  const flooded = await paced(base, '192.0.2.1')
  return { quiet, flooded, flood: await flooding.stop() }
}

/** One search, then PACE_MS, for HALF seconds: its latencies' p99 and what it got. */
async function paced(base: string, client: string): Promise<Paced> {
  const latencies: number[] = []
  let refused = 0
  const until = performance.now() + HALF * 1000
  while (performance.now() < until) {
    const started = performance.now()
    const response = await fetch(base + PACED_SEARCH, { headers: { 'x-forwarded-for': client } })
    await response.arrayBuffer()
    latencies.push(performance.now() - started)
    if (response.status !== 200) refused++
    await Bun.sleep(PACE_MS)
  }
  latencies.sort((a, b) => a - b)
  return { p99: latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)]!, answered: latencies.length - refused, refused }
}

/** The flooding client's heavy quota starts full (a burst of 300): flood until it is refused, so that rounds measure the steady state. */
async function spendBurst(base: string): Promise<void> {
  const flooding = flood(base, '198.51.100.1', 'until-limited')
  await Promise.race([flooding.done, Bun.sleep(120_000)])
  await flooding.stop()
}

/** FLOOD_CONNECTIONS loops of searches no cache has seen, as fast as the service answers, in a process of their own (bench/flood-searches.ts). */
function flood(base: string, client: string, mode = 'until-stopped'): { done: Promise<FloodResult>; stop(): Promise<FloodResult> } {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'flood-searches.ts'), base + PAGE_1, client, String(SIZE), String(FLOOD_CONNECTIONS), mode], { stdout: 'pipe', stderr: 'inherit' })
  const done = new Response(child.stdout).text().then((text) => JSON.parse(text) as FloodResult)
  return {
    done,
    stop() {
      child.kill('SIGTERM')
      return done
    },
  }
}

function describeFlood(flood: FloodResult): string {
  const perSecond = (count: number) => Math.round(count / flood.seconds)
  return `${perSecond(flood.answered)}/s answered, ${perSecond(flood.limited)}/s 429, ${perSecond(flood.refused)}/s 503`
}

function summarize(hits: Record<'on' | 'off', Measure[]>, fairness: Record<'on' | 'off', { quiet: Paced; flooded: Paced; flood: FloodResult }[]>, how: string): string {
  const rps = (quotas: 'on' | 'off') => median(hits[quotas].map((measure) => measure.rps))
  const ratio = rps('on') / rps('off')
  const p99 = (quotas: 'on' | 'off', when: 'quiet' | 'flooded') => median(fairness[quotas].map((sample) => sample[when].p99))
  const row = (quotas: 'on' | 'off') => {
    const samples = fairness[quotas]
    const q = (pick: (sample: (typeof samples)[number]) => number) => median(samples.map(pick))
    return `| quotas ${quotas} | ${p99(quotas, 'quiet').toFixed(1)} | ${p99(quotas, 'flooded').toFixed(1)} | ${(p99(quotas, 'flooded') / p99(quotas, 'quiet')).toFixed(1)}× | ${q((s) => s.flooded.refused)} | ${Math.round(q((s) => s.flood.answered / s.flood.seconds))} | ${Math.round(q((s) => s.flood.limited / s.flood.seconds))} | ${Math.round(q((s) => s.flood.refused / s.flood.seconds))} |`
  }
  const fair = p99('on', 'flooded') / p99('on', 'quiet')
  return [
    `# Per-client quotas (C52), ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `\`vitrine_bench_${SIZE}\` (${how}); ${HALF} s a measurement, ${ROUNDS} rounds alternating, medians.`,
    '',
    `Warm hit path (page 1 from the cache, ${tool} at ${CONNECTIONS} connections): quotas on, nobody over them, ${Math.round(rps('on'))} req/s; off ${Math.round(rps('off'))} req/s: ${ratio.toFixed(3)} (target ≥ 0.95: ${ratio >= 0.95 ? 'met' : 'missed'}).`,
    '',
    `Searches of one client (one at a time, ${PACE_MS} ms apart) while another floods uncached searches at ${FLOOD_CONNECTIONS} connections (CACHE=off; quotas on: RATE_LIMIT_HEAVY ${FAIR.RATE_LIMIT_HEAVY} a ${FAIR.RATE_LIMIT_WINDOW_S} s window; DATABASE_HEAVY_MAX ${config.databaseHeavyMax} of ${config.databasePoolMax}):`,
    '',
    '| service | quiet p99 ms | flooded p99 ms | flooded ÷ quiet | its searches refused | flood answered/s | flood 429/s | flood 503/s |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    row('on'),
    row('off'),
    '',
    `Target: with quotas, the other client's flooded p99 within 2× quiet: ${fair.toFixed(1)}× (${fair <= 2 ? 'met' : 'missed'}).`,
  ].join('\n')
}

