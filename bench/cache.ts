/**
 * The cache half of `bun run bench` (issue 10): warm-cache throughput against
 * a Bun server that returns a fixed body of the same size (the ceiling), 304s,
 * the latency from a commit to the first fresh answer, memory with the cache
 * full, and WORKERS=2 against WORKERS=1. Runs after bench/run.ts, on the
 * `vitrine_bench` database it built (DATABASE_URL, or the embedded one).
 */
import { readFileSync } from 'node:fs'
import { appendFile, copyFile, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect'
import { percentile } from '../test/support/correlated-load'
import { CONNECTIONS, load, LOAD_TOOL, readSeconds } from './load'
import { startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
const { target, close } = await setUpBench()
const benchUrl = Object.assign(new URL(target.url), { pathname: '/vitrine_bench' }).toString()
const writer = connectDatabase(benchUrl, { max: 1 })
const children: ReturnType<typeof Bun.spawn>[] = []

try {
  const [{ entries }] = await writer<{ entries: number }[]>`select count(*)::int as entries from entries`.catch(() => [{ entries: 0 }])
  if (!entries) throw new Error('vitrine_bench is missing or empty: run `bun run bench` (bench/run.ts builds it first).')
  const tool = LOAD_TOOL
  const cached = await startService({})
  const uncached = await startService({ CACHE: 'off' })
  const cases = [
    ['list page 1', '/api/v1/content/post'],
    ['list per_page=100', '/api/v1/content/post?per_page=100'],
    ['single entry by slug', '/api/v1/content/post/entree-1004?lang=fr'],
  ] as const
  // The routes of C44–C46 and C48, warm, against the same ceiling (the first table only).
  const newRoutes = [
    ['list fields=id,title,slug', '/api/v1/content/post?fields=id,title,slug'],
    ['entry include=alternates', '/api/v1/content/post/entree-1004?lang=fr&include=alternates'],
    ['languages', '/api/v1/languages'],
    ['content types', '/api/v1/content-types'],
    ['terms of a taxonomy', '/api/v1/taxonomies/tag/terms'],
    ['sync page 1', '/api/v1/sync/post'],
    ['API index', '/api/v1'],
  ] as const
  const rows: string[] = []
  for (const [name, path] of [...cases, ...newRoutes]) {
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

  // C38: the chain's output kept per variant. Each case alternates the services, median of 3 rounds.
  const trivial = await startService({ EXTENSIONS_DIR: join(ROOT, 'bench', 'extensions') })
  // The custom-fields example installed as a site would: copied into an extensions folder of its own.
  const customDir = await mkdtemp(join(tmpdir(), 'vitrine-custom-fields-'))
  await copyFile(join(ROOT, 'src', 'hooks', 'examples', 'custom-fields.ts'), join(customDir, 'custom-fields.ts'))
  const custom = await startService({ EXTENSIONS_DIR: customDir })
  const hookRows: string[] = []
  for (const [name, path] of cases) {
    const [plain, withTrivial, withCustom] = await alternate(tool, [cached, trivial, custom].map((service) => service + path))
    hookRows.push(`| warm cache, ${name} | ${plain.toFixed(0)} | ${withTrivial.toFixed(0)} (${(withTrivial / plain).toFixed(2)}) | ${withCustom.toFixed(0)} (${(withCustom / plain).toFixed(2)}) |`)
    console.log(hookRows.at(-1))
  }
  const trivialOff = await startService({ CACHE: 'off', EXTENSIONS_DIR: join(ROOT, 'bench', 'extensions') })
  const customOff = await startService({ CACHE: 'off', EXTENSIONS_DIR: customDir })
  for (const [name, path] of [cases[0], cases[2]]) {
    const [plain, withTrivial, withCustom] = await alternate(tool, [uncached, trivialOff, customOff].map((service) => service + path))
    hookRows.push(`| CACHE=off, ${name} | ${plain.toFixed(0)} | ${withTrivial.toFixed(0)} (${(withTrivial / plain).toFixed(2)}) | ${withCustom.toFixed(0)} (${(withCustom / plain).toFixed(2)}) |`)
    console.log(hookRows.at(-1))
  }
  // An uncached slug against Bun + postgres.js running the same statement and nothing else.
  const minimal = await spawnPrinted(['bun', join(ROOT, 'bench', 'minimal-server.ts'), benchUrl])
  const [slugService, slugMinimal] = await alternate(tool, [uncached + cases[2][1], `http://127.0.0.1:${minimal}${cases[2][1]}`])
  const slugRow = `| uncached slug: service ${slugService.toFixed(0)} req/s, minimal Bun + postgres.js ${slugMinimal.toFixed(0)} req/s | ${(slugService / slugMinimal).toFixed(2)} |`
  console.log(slugRow)

  // A header with a new value on every request, read by a callback: one variant per request (C38).
  const session = await startService({ EXTENSIONS_DIR: join(ROOT, 'bench', 'extensions-session'), CACHE_MAX_MB: '16' })
  let flood = 'wrk is not installed: skipped'
  if (tool === 'wrk') {
    const script = join(tmpdir(), `vitrine-session-${process.pid}.lua`)
    await writeFile(script, 'local n = 0\nrequest = function()\n  n = n + 1\n  return wrk.format(nil, nil, { ["x-session"] = tostring(n) .. "-" .. tostring(math.random(1e9)) })\nend\n')
    await fetch(session + cases[1][1])
    const rssBefore = rssMb(session.pid)
    const floodRun = await load(tool, session + cases[0][1], SECONDS, {}, script)
    const other = await fetch(session + cases[1][1])
    flood = `${floodRun.rps.toFixed(0)} req/s (each a new variant), RSS ${rssBefore} → ${rssMb(session.pid)} MB with CACHE_MAX_MB=16; another answer afterwards: X-Cache ${other.headers.get('x-cache')}`
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
    `| unique x-session on every request, read by a callback (flood) | ${flood} |`,
    '',
    'Extensions (C38; req/s, median of 3 alternating runs, ratio to no callback)',
    '',
    '| case | no callback | one trivial callback | custom-fields example |',
    '| --- | ---: | ---: | ---: |',
    ...hookRows,
    '',
    '| single entry, uncached | service ÷ minimal |',
    '| --- | ---: |',
    slugRow,
  ].join('\n')
  console.log(`\n${table}\n`)
  await appendFile(join(ROOT, 'bench', 'last-run.md'), `\n${table}\n`).catch(() => writeFile(join(ROOT, 'bench', 'last-run.md'), `${table}\n`))
} finally {
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => child.exited))
  await writer.end()
  await close()
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

/** Median req/s of each URL over 3 rounds that alternate between them (half a run each): the machine's drift hits all alike. */
async function alternate(tool: string, urls: string[]): Promise<number[]> {
  for (const url of urls) await load(tool, url, 1)
  const runs: number[][] = urls.map(() => [])
  for (let round = 0; round < 3; round++) {
    for (const [index, url] of urls.entries()) {
      const measure = await load(tool, url, Math.ceil(SECONDS / 2))
      if (measure.errors) throw new Error(`${measure.errors} requests failed on ${url}`)
      runs[index]!.push(measure.rps)
    }
  }
  return runs.map((values) => values.sort((a, b) => a - b)[1]!)
}

/** Starts a child that prints its port first. */
async function spawnPrinted(command: string[]): Promise<number> {
  const child = Bun.spawn(command, { stdout: 'pipe' })
  children.push(child)
  const reader = child.stdout.getReader()
  return Number(new TextDecoder().decode((await reader.read()).value).trim())
}

async function fixedBodyServer(body: Uint8Array): Promise<{ url: string; stop(): void }> {
  const file = join(tmpdir(), `vitrine-ceiling-${process.pid}-${body.byteLength}.json`)
  await writeFile(file, body)
  const script = `const body = new Uint8Array(await Bun.file(${JSON.stringify(file)}).arrayBuffer()); const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8' } }) }); console.log(server.port)`
  const port = await spawnPrinted(['bun', '-e', script])
  const child = children.at(-1)!
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill('SIGTERM') }
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}
