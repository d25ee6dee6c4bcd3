/**
 * The cache half of `bun run bench` (issue 10): warm-cache throughput against
 * a Bun server that returns a fixed body of the same size (the ceiling), 304s,
 * the latency from a commit to the first fresh answer, memory with the cache
 * full, and WORKERS=2 against WORKERS=1. Runs after bench/run.ts, on the
 * `vitrine_bench` database it built (DATABASE_URL, or the embedded one).
 */
import { readFileSync } from 'node:fs'
import { writeFile, appendFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { connectDatabase } from '../src/db/connect'
import { resolveDatabase } from '../src/db/open'
import { createLogger } from '../src/log'
import { percentile } from '../test/support/correlated-load'
import { CONNECTIONS, load, readSeconds } from './load'
import { startBenchService } from './service'

const ROOT = join(import.meta.dir, '..')
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
const target = await resolveDatabase(config, createLogger('warn'))
const benchUrl = Object.assign(new URL(target.url), { pathname: '/vitrine_bench' }).toString()
const writer = connectDatabase(benchUrl, { max: 1 })
const children: ReturnType<typeof Bun.spawn>[] = []

try {
  const [{ entries }] = await writer<{ entries: number }[]>`select count(*)::int as entries from entries`.catch(() => [{ entries: 0 }])
  if (!entries) throw new Error('vitrine_bench is missing or empty: run `bun run bench` (bench/run.ts builds it first).')
  const tool = Bun.which('wrk') ? 'wrk' : 'autocannon'
  const cached = await startService({})
  const uncached = await startService({ CACHE: 'off' })
  const cases = [
    ['list page 1', '/api/v1/content/post'],
    ['list per_page=100', '/api/v1/content/post?per_page=100'],
    ['single entry by slug', '/api/v1/content/post/entree-1004?lang=fr'],
  ] as const
  const rows: string[] = []
  for (const [name, path] of cases) {
    const body = new Uint8Array(await (await fetch(cached + path)).arrayBuffer())
    const ceiling = await fixedBodyServer(body)
    await load(tool, cached + path, 1)
    // Alternate the service and its ceiling: the machine's drift hits both alike.
    const service = await load(tool, cached + path, SECONDS)
    const fixed = await load(tool, ceiling.url, SECONDS)
    const database = await load(tool, uncached + path, SECONDS)
    ceiling.stop()
    rows.push(`| ${name} (${body.byteLength} B) | ${service.rps.toFixed(0)} | ${service.p99.toFixed(1)} | ${fixed.rps.toFixed(0)} | ${(service.rps / fixed.rps).toFixed(2)} | ${database.rps.toFixed(0)} | ${(service.rps / database.rps).toFixed(0)}× | ${service.errors + database.errors} |`)
    console.log(rows.at(-1))
  }

  const first = await fetch(cached + cases[0][1])
  const notModified = await load(tool, cached + cases[0][1], SECONDS, { 'If-None-Match': first.headers.get('etag')! })

  // Commit to fresh answer: a title is changed and committed, then the service is asked until it shows it.
  const [{ entry_id: entry }] = await writer<{ entry_id: number }[]>`select entry_id from entry_translations where slug = 'entree-1004' and language_code = 'fr'`
  const latencies: number[] = []
  for (let round = 0; round < 200; round++) {
    const title = `Titre ${round} ${Math.random()}`
    await fetch(`${cached}/api/v1/content/post/entree-1004?lang=fr`)
    await writer`update entry_translations set title = ${title} where entry_id = ${entry} and language_code = 'fr'`
    const committed = performance.now()
    for (let attempt = 0; ; attempt++) {
      const seen = ((await (await fetch(`${cached}/api/v1/content/post/entree-1004?lang=fr`)).json()) as { data: { title: string } }).data.title
      if (seen === title) break
      if (attempt > 100_000) throw new Error('the change never showed')
    }
    latencies.push(performance.now() - committed)
  }

  // Memory with the cache full: a cache of 64 MB (the default) filled with distinct pages of 100 items.
  const filler = await startService({ CACHE_MAX_MB: '64' })
  const rssBefore = rssMb(filler.pid)
  for (let page = 1; page <= 1200; page++) await fetch(`${filler.url}/api/v1/content/post?per_page=100&page=${page}&lang=${['en', 'fr', 'pt-BR'][page % 3]}`)
  const rssFull = rssMb(filler.pid)

  const one = await startService({ WORKERS: '1' })
  const two = await startService({ WORKERS: '2' })
  await load(tool, two.url + cases[0][1], 1)
  const workersOne = await load(tool, one.url + cases[0][1], SECONDS)
  const workersTwo = await load(tool, two.url + cases[0][1], SECONDS)

  const table = [
    `Cache (wrk or autocannon: ${tool}, ${CONNECTIONS} connections, ${SECONDS} s a run; the ceiling is a Bun server returning the same bytes)`,
    '',
    '| warm cache | req/s | p99 ms | ceiling req/s | ÷ ceiling | CACHE=off req/s | cache ÷ off | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    '| other | value |',
    '| --- | --- |',
    `| 304 (If-None-Match, list page 1) | ${notModified.rps.toFixed(0)} req/s, p99 ${notModified.p99.toFixed(1)} ms |`,
    `| commit → fresh answer (200 commits) | p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms |`,
    `| memory, 64 MB cache filled with 1 200 pages of 100 items | RSS ${rssBefore} MB → ${rssFull} MB |`,
    `| WORKERS=1 / WORKERS=2, warm list page 1 | ${workersOne.rps.toFixed(0)} / ${workersTwo.rps.toFixed(0)} req/s |`,
  ].join('\n')
  console.log(`\n${table}\n`)
  await appendFile(join(ROOT, 'bench', 'last-run.md'), `\n${table}\n`).catch(() => writeFile(join(ROOT, 'bench', 'last-run.md'), `${table}\n`))
} finally {
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => child.exited))
  await writer.end()
  await target.embedded?.stop()
}

interface Started {
  url: string
  pid: number
  toString(): string
}

async function startService(env: Record<string, string>): Promise<Started> {
  const { base: url, process: child } = await startBenchService({
    databaseUrl: benchUrl,
    env,
    // Ready when it answers from memory: the change listener is up.
    ready: async (base) => {
      const response = await fetch(`${base}/api/v1/content/post`)
      return env.CACHE === 'off' || response.headers.get('x-cache') === 'HIT'
    },
  })
  children.push(child)
  return { url, pid: child.pid, toString: () => url }
}

async function fixedBodyServer(body: Uint8Array): Promise<{ url: string; stop(): void }> {
  const file = join(tmpdir(), `vitrine-ceiling-${process.pid}-${body.byteLength}.json`)
  await writeFile(file, body)
  const script = `const body = new Uint8Array(await Bun.file(${JSON.stringify(file)}).arrayBuffer()); const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8' } }) }); console.log(server.port)`
  const child = Bun.spawn(['bun', '-e', script], { stdout: 'pipe' })
  children.push(child)
  const reader = child.stdout.getReader()
  const port = Number(new TextDecoder().decode((await reader.read()).value).trim())
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGTERM') }
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}
