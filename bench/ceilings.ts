/**
 * `bun run bench:ceilings`, part of `bun run bench`: the service against what
 * Bun does with nothing of ours in the way (C54, issue 45), side by side in
 * one run (alternating A and B each round; the median of the rounds' ratios):
 * 1. uncached (CACHE=off), a single entry by slug and list page 1, against
 *    bench/reference-server.ts: raw Bun.serve, postgres.js and a statement
 *    written by hand for each answer, sharing no code with the service; its
 *    bodies are checked to be the service's, byte for byte, before measuring
 *    (targets: the entry ≥ 0.85, the list ≥ 1.5);
 *    and the single entry against the same reference doing by hand what the
 *    contract asks of every uncached answer (no target: what that costs,
 *    apart from our code; its headers are checked to be the service's);
 * 2. warm hits (list page 1 and a single entry) against a Bun server
 *    returning the same bytes with one header (target ≥ 0.9 each); and the
 *    single entry's against one sending our headers too, and against one
 *    doing only what the contract asks of every answer (C29, C32: it reads
 *    the URL, X-Request-Id and If-None-Match; no target: what they cost,
 *    apart from our code); and that last server against the static one, with no code of ours on
 *    either side: the most any server keeping C29 and C32 can reach of the static server.
 * On `vitrine_bench_100000` (bench/dataset.ts; kept between runs).
 * BENCH_SECONDS (default 10): each measurement takes ceil(BENCH_SECONDS / 4) s;
 * each URL is first put under load four times as long, unmeasured.
 * BENCH_ROUNDS (default 4). DATABASE_URL: the server to keep the database on;
 * unset: the embedded PostgreSQL under DATA_DIR. Written to
 * bench/ceilings-last-run.md too.
 */
import { rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureBenchDatabase } from './dataset'
import { CONNECTIONS, LOAD_TOOL, median, ratioCells, readRounds, readSeconds, sideBySide } from './load'
import { startBenchService, waitForStartChecks } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZE = 100_000
const SECONDS = Math.max(1, Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 4))
const ROUNDS = readRounds(process.env.BENCH_ROUNDS, 4)
/** How long each URL is under load before it is first measured. */
const WARM_UP_SECONDS = 4 * SECONDS
const LIST = '/api/v1/content/post'
const ENTRY = '/api/v1/content/post/entree-1004?lang=fr'
/** Where the uncached service and the reference both say the images are. */
const MEDIA_BASE_URL = 'https://cms.example.com/media'

const { target, admin, close } = await setUpBench()
const children: ReturnType<typeof Bun.spawn>[] = []
/** The bodies the fixed-bytes servers read, removed at the end. */
const bodies: string[] = []
try {
  const database = await ensureBenchDatabase(admin, target.url, SIZE)
  const warm = await startBenchService({ databaseUrl: database.url })
  const uncached = await startBenchService({ databaseUrl: database.url, env: { CACHE: 'off', MEDIA_BASE_URL } })
  children.push(warm.process, uncached.process)
  const reference = `http://127.0.0.1:${await spawnPrinted(['bun', join(ROOT, 'bench', 'reference-server.ts'), database.url, MEDIA_BASE_URL])}`
  for (const path of [ENTRY, LIST]) await sameBytes(uncached.base + path, reference + path)
  const contractReference = `http://127.0.0.1:${await spawnPrinted(['bun', join(ROOT, 'bench', 'reference-server.ts'), database.url, MEDIA_BASE_URL, 'contract'])}`
  await sameBytes(uncached.base + ENTRY, contractReference + ENTRY)
  await sameHeaders(uncached.base + ENTRY, contractReference + ENTRY)
  await waitForStartChecks(admin, new URL(database.url).pathname.slice(1))
  const contract = await fixedBodyServer(warm.base + ENTRY, 'contract')
  const entryBytes = await fixedBodyServer(warm.base + ENTRY)
  await sameBytes(warm.base + ENTRY, contract)
  const pairs = [
    { name: 'uncached single entry ÷ a hand-written Bun + postgres.js server', ours: uncached.base + ENTRY, theirs: reference + ENTRY, target: 0.85 },
    // No target: what the contract asks of every uncached answer (C22, C29, C32-C34), written by hand, apart from our code.
    { name: 'uncached single entry ÷ the same server doing what the contract asks of every answer', ours: uncached.base + ENTRY, theirs: contractReference + ENTRY, target: null },
    { name: 'uncached list page 1 ÷ a hand-written Bun + postgres.js server', ours: uncached.base + LIST, theirs: reference + LIST, target: 1.5 },
    { name: 'warm list page 1 ÷ a Bun server returning the same bytes', ours: warm.base + LIST, theirs: await fixedBodyServer(warm.base + LIST), target: 0.9 },
    { name: 'warm single entry ÷ a Bun server returning the same bytes', ours: warm.base + ENTRY, theirs: entryBytes, target: 0.9 },
    // No target: what the headers the contract asks for cost, apart from what our code does.
    { name: 'warm single entry ÷ a Bun server returning the same bytes and headers', ours: warm.base + ENTRY, theirs: await fixedBodyServer(warm.base + ENTRY, 'headers'), target: null },
    // No target: what any server answering from memory must do per request under C29 and C32, apart from our code.
    { name: 'warm single entry ÷ a Bun server returning them doing only what the contract asks of each answer', ours: warm.base + ENTRY, theirs: contract, target: null },
    // No target, and no code of ours on either side: the most the warm entry's ratio to the static server can be for any server keeping C29 and C32.
    { name: 'a Bun server doing only what the contract asks of each answer (not ours) ÷ a Bun server returning the same bytes', ours: contract, theirs: entryBytes, target: null },
  ]
  const rows: string[] = []
  const warmed = new Set<string>()
  for (const pair of pairs) {
    const { ours, theirs, ratios } = await sideBySide(pair.ours, pair.theirs, { rounds: ROUNDS, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS, warmed })
    rows.push(`| ${pair.name} | ${Math.round(median(ours.map((m) => m.rps)))} | ${Math.round(median(theirs.map((m) => m.rps)))} | ${ratioCells(ratios, pair.target)} |`)
    console.log(rows.at(-1))
  }
  const report = [
    `# The service against its ceilings (C54), ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `\`vitrine_bench_${SIZE}\` (${database.how}); ${LOAD_TOOL} at ${CONNECTIONS} connections, ${SECONDS} s a measurement, ${ROUNDS} rounds alternating; req/s are medians, the ratio is the median of each round's ratio (its range beside it).`,
    '',
    '| case | service req/s | ceiling req/s | ratio | rounds | target |',
    '| --- | ---: | ---: | ---: | --- | --- |',
    ...rows,
  ].join('\n')
  console.log(`\n${report}`)
  await writeFile(join(ROOT, 'bench', 'ceilings-last-run.md'), report + '\n')
} finally {
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => child.exited))
  await close()
  await Promise.all(bodies.map((file) => rm(file, { force: true })))
}

/** The reference answers what the service answers, to the byte: else the comparison means nothing. */
async function sameBytes(ours: string, theirs: string): Promise<void> {
  const [a, b] = await Promise.all([ours, theirs].map(async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer())))
  if (a!.length !== b!.length || a!.some((byte, index) => byte !== b![index])) throw new Error(`The reference's body differs from the service's:\n${ours}\n${theirs}`)
}

/** The contract's reference sends the service's headers, but for the request's own id and the date. */
async function sameHeaders(ours: string, theirs: string): Promise<void> {
  const [a, b] = await Promise.all(
    [ours, theirs].map(async (url) => {
      const response = await fetch(url)
      await response.arrayBuffer()
      return JSON.stringify([...response.headers].filter(([name]) => name !== 'x-request-id' && name !== 'date').sort())
    }),
  )
  if (a !== b) throw new Error(`The contract reference's headers differ from the service's:\n${a}\n${b}`)
}

/** Starts a process that prints its port first, and returns the port. */
async function spawnPrinted(command: string[]): Promise<number> {
  const child = Bun.spawn(command, { stdout: 'pipe' })
  children.push(child)
  return Number(new TextDecoder().decode((await child.stdout.getReader().read()).value).trim())
}

/**
 * A Bun server of its own returning the bytes `url` answers now:
 * - `bytes`: with a JSON type and nothing else;
 * - `headers`: with that answer's headers instead (a hit's, copied once), and a new X-Request-Id each time, as ours;
 * - `contract`: the same, doing only what the contract asks a server of every answer, the cheapest way Bun
 *   allows: it reads the request's URL (and finds the body by it), its X-Request-Id (C29: echoed when sane,
 *   else a new one) and its If-None-Match (C32: a 304 when it matches).
 */
async function fixedBodyServer(url: string, kind: 'bytes' | 'headers' | 'contract' = 'bytes'): Promise<string> {
  const file = join(tmpdir(), `vitrine-ceiling-${process.pid}-${children.length}.json`)
  bodies.push(file)
  // With our headers: a hit's (X-Cache, Age), whatever asked this URL before.
  if (kind !== 'bytes') await (await fetch(url)).arrayBuffer()
  const response = await fetch(url)
  await writeFile(file, new Uint8Array(await response.arrayBuffer()))
  const headers = kind !== 'bytes' ? Object.fromEntries([...response.headers].filter(([name]) => !['date', 'content-length', 'x-request-id'].includes(name))) : { 'content-type': 'application/json; charset=utf-8' }
  const respond = {
    bytes: `() => new Response(body, { headers: same })`,
    headers: `() => { const fields = new Headers(same); fields.set('X-Request-Id', crypto.randomUUID()); return new Response(body, { headers: fields }) }`,
    contract: `(request) => {
      const found = bodies.get(request.url.slice(request.url.indexOf('/', 8)))
      if (found === undefined) return new Response(null, { status: 404 })
      const incoming = request.headers.get('x-request-id')
      const id = incoming && /^[A-Za-z0-9._:-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID()
      const response = request.headers.get('if-none-match') === etag ? new Response(null, { status: 304, headers: same }) : new Response(found, { headers: same })
      response.headers.set('X-Request-Id', id)
      return response
    }`,
  }[kind]
  const { pathname, search } = new URL(url)
  const path = pathname + search
  const script = `const body = new Uint8Array(await Bun.file(${JSON.stringify(file)}).arrayBuffer()); const bodies = new Map([[${JSON.stringify(path)}, body]]); const etag = ${JSON.stringify(response.headers.get('etag'))}; const same = new Headers(${JSON.stringify(headers)}); const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: ${respond} }); console.log(server.port)`
  return `http://127.0.0.1:${await spawnPrinted(['bun', '-e', script])}${kind === 'contract' ? path : '/'}`
}
