/**
 * `bun run bench:edge`, part of `bun run bench`: C51, the edge kept exact.
 *
 * A database of its own (`vitrine_bench_edge`, rebuilt each run: type
 * `bench-edge` of 1 000 live entries, three types of 1 000 for the bulk
 * write), one service (CACHE_MAX_AGE=3600, PURGE_URLS naming a proxy that
 * counts the purges and forwards them) behind a real Varnish with
 * deploy/varnish/vitrine.vcl:
 * 1. commit → fresh through Varnish: 32 clients read page 1 of the type (per_page 70)
 *    through Varnish; 50 commits 200 ms apart, each a title update of an entry
 *    on that page; from the commit (the UPDATE's acknowledgement) to the first
 *    read through Varnish that shows it (p50, p99; target p99 ≤ 100 ms), and
 *    the writer's UPDATE itself beside it;
 * 2. origin share: 32 clients read page 1 and one entry through Varnish for
 *    BENCH_SECONDS while one entry of the page is written each second; the
 *    requests that reached the service (counted by a proxy in front of it) per
 *    read (varnishstat's MAIN.client_req) (target ≤ 1%);
 * 3. a statement updating 3 000 entries (1 000 of each of three types): the
 *    purge requests it took (the first purge; the second follows after
 *    DATABASE_TIMEOUT_MS) (target ≤ 10).
 * Written to bench/edge-last-run.md too. Needs varnishd (apt-get install varnish varnish-modules).
 * DATABASE_URL: the server to keep the database on; unset: the embedded PostgreSQL under DATA_DIR.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect'
import { migrate } from '../src/db/migrate'
import { startVarnish, VARNISHD } from '../test/support/varnish'
import { CONNECTIONS, load, LOAD_TOOL, readSeconds } from './load'
import { startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const NAME = 'vitrine_bench_edge'
const TYPE = 'bench-edge'
const BULK_TYPES = ['bench-bulk-a', 'bench-bulk-b', 'bench-bulk-c']
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
const PAGE_1 = `/api/v1/content/${TYPE}`

if (!VARNISHD) {
  console.log('bench:edge skipped: no varnishd (apt-get install varnish varnish-modules).')
  process.exit(0)
}

const { config, target, admin, close } = await setUpBench()
const lines: string[] = []
const say = (line: string) => (console.log(line), lines.push(line))
const stops: (() => unknown)[] = []
try {
  await admin.unsafe(`drop database if exists ${NAME} with (force)`)
  await admin.unsafe(`create database ${NAME}`)
  const url = Object.assign(new URL(target.url), { pathname: `/${NAME}` }).toString()
  const writer = connectDatabase(url, { max: 2 })
  stops.push(() => writer.end())
  await migrate(writer)
  await seed(writer)

  const purges: { keys: string[]; at: number }[] = []
  let varnishUrl = ''
  // Counts the purges (and when they arrive) on their way to Varnish.
  const proxy = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const xkey = request.headers.get('xkey') ?? ''
      // Until Varnish is up (the service purges everything as it takes the duty): refused, and retried.
      if (!varnishUrl) return new Response('Varnish is not up yet', { status: 503 })
      purges.push({ keys: xkey.split(' '), at: performance.now() })
      const response = await fetch(varnishUrl, { method: 'PURGE', headers: { xkey } })
      return new Response(await response.text(), { status: response.status })
    },
  })
  stops.push(() => proxy.stop(true))
  const service = await startBenchService({ databaseUrl: url, env: { CACHE_MAX_AGE: '3600', PURGE_URLS: `http://127.0.0.1:${proxy.port}/` } })
  stops.push(() => service.process.kill('SIGTERM'))
  // Counts the requests that reach the service: Varnish's own backend_req is added to its totals late.
  let originRequests = 0
  const origin = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      originRequests++
      const url = new URL(request.url)
      return fetch(service.base + url.pathname + url.search, { method: request.method, headers: request.headers })
    },
  })
  stops.push(() => origin.stop(true))
  const varnish = await startVarnish(origin.port!)
  stops.push(() => varnish.stop())
  varnishUrl = varnish.url
  const ids = (await writer<{ id: number }[]>`select id from entries where content_type_id = (select id from content_types where slug = ${TYPE}) order by id desc limit 70`).map((row) => row.id)

  say(`# The edge kept exact (C51), ${new Date().toISOString().slice(0, 16)}Z`)
  say('')
  say(`Varnish ${(await Bun.$`${VARNISHD} -V`.quiet().nothrow()).stderr.toString().match(/varnish-[\d.]+/)?.[0]} with deploy/varnish/vitrine.vcl, CACHE_MAX_AGE=3600, ${LOAD_TOOL} at ${CONNECTIONS} connections.`)
  say('')

  // 1. Commit → fresh, with nobody else reading, then while 32 clients read through Varnish.
  const quiet = await freshness(varnish.url, writer, ids.slice(0, 20), purges, 20)
  say(`- Commit → fresh through Varnish, 20 commits, no other reader: p50 ${quiet.fresh50.toFixed(1)} ms, p99 ${quiet.fresh99.toFixed(1)} ms; of which commit → purge received: p50 ${quiet.purge50.toFixed(1)} ms, p99 ${quiet.purge99.toFixed(1)} ms; the writer's UPDATE itself (before the commit): p50 ${quiet.write50.toFixed(1)} ms, p99 ${quiet.write99.toFixed(1)} ms.`)
  const reading = load(LOAD_TOOL, `${varnish.url}${PAGE_1}?per_page=70`, Math.max(SECONDS, 14))
  await Bun.sleep(1000)
  const busy = await freshness(varnish.url, writer, ids.slice(20), purges, 50)
  const measured = await reading
  say(
    `- Commit → fresh through Varnish, 50 commits under ${Math.round(measured.rps)} reads/s: p50 ${busy.fresh50.toFixed(1)} ms, p99 ${busy.fresh99.toFixed(1)} ms (target p99 ≤ 100 ms: ${busy.fresh99 <= 100 ? 'met' : 'missed'}); of which commit → purge received: p50 ${busy.purge50.toFixed(1)} ms, p99 ${busy.purge99.toFixed(1)} ms; the writer's UPDATE itself: p50 ${busy.write50.toFixed(1)} ms, p99 ${busy.write99.toFixed(1)} ms.`,
  )

  // 2. The origin's share of the reads, with a write a second.
  const before = { client: (await varnishCounters(varnish.workDir)).client, origin: originRequests }
  let writes = 0
  const writing = setInterval(() => {
    writes++
    // A postgres.js query runs once awaited or `then`ed: `execute` sends it now.
    writer`update entry_translations set title = ${`write ${writes}`} where entry_id = ${ids[writes % ids.length]}`.execute().catch((error) => console.error('bench:edge: a write failed', error))
  }, 1000)
  const [pageLoad, entryLoad] = await Promise.all([
    load(LOAD_TOOL, varnish.url + PAGE_1, SECONDS, {}, undefined, CONNECTIONS / 2),
    load(LOAD_TOOL, `${varnish.url}${PAGE_1}/entry-${ids[0]}`, SECONDS, {}, undefined, CONNECTIONS / 2),
  ])
  clearInterval(writing)
  // Varnish adds its threads' counts of client requests to its totals a little later.
  await Bun.sleep(2000)
  const reads = (await varnishCounters(varnish.workDir)).client - before.client
  const fetched = originRequests - before.origin
  const share = fetched / reads
  say(
    `- Origin share, ${writes} writes in ${SECONDS} s (one a second) while page 1 and one entry are read (${Math.round(pageLoad.rps + entryLoad.rps)} reads/s): ${fetched} of ${reads} reads reached the service, ${(share * 100).toFixed(3)}% (target ≤ 1%: ${share <= 0.01 ? 'met' : 'missed'}).`,
  )

  // 3. One statement updating 3 000 entries.
  await Bun.sleep(config.databaseTimeoutMs + 500)
  const mark = purges.length
  await writer`update entries set created_at = created_at where content_type_id in (select id from content_types where slug in ${writer(BULK_TYPES)})`
  await Bun.sleep(1000)
  const bulk = purges.slice(mark)
  say(`- A statement updating 3 000 entries of three types: ${bulk.length} purge requests, ${bulk.reduce((sum, purge) => sum + purge.keys.length, 0)} keys (target ≤ 10: ${bulk.length <= 10 ? 'met' : 'missed'}), each sent again after DATABASE_TIMEOUT_MS.`)
  await writeFile(join(ROOT, 'bench', 'edge-last-run.md'), lines.join('\n') + '\n')
} finally {
  for (const stop of stops.reverse()) await stop()
  await close()
}

/**
 * `rounds` commits 200 ms apart, each a title update of an entry on page 1 of 70: from the commit to the
 * read through Varnish that shows it, and to the purge naming it. The commit is taken at the
 * UPDATE's acknowledgement (an autocommit: PostgreSQL acknowledges right after the commit); the
 * UPDATE's own round trip, the writer's time, is reported beside.
 */
async function freshness(base: string, writer: ReturnType<typeof connectDatabase>, ids: number[], purges: { keys: string[]; at: number }[], rounds: number) {
  const latencies: number[] = []
  const purgeDelays: number[] = []
  const writes: number[] = []
  for (let round = 0; round < rounds; round++) {
    const id = ids[round % ids.length]
    const title = `fresh ${round} ${Date.now()}`
    const started = performance.now()
    await writer`update entry_translations set title = ${title} where entry_id = ${id}`
    const committed = performance.now()
    writes.push(committed - started)
    while (!(await (await fetch(`${base}${PAGE_1}?per_page=70`)).text()).includes(title)) {
      if (performance.now() - committed > 10_000) throw new Error(`round ${round}: never fresh`)
    }
    latencies.push(performance.now() - committed)
    // The notification can overtake the acknowledgement: a purge before it counts as 0. Each round
    // writes an entry of its own (70 ids: 20 for the quiet rounds, 50 for the busy ones): a second purge (after DATABASE_TIMEOUT_MS) of an earlier round never counts.
    const purged = purges.find((purge) => purge.at >= started && purge.keys.includes(`entry-${id}`))
    if (purged) purgeDelays.push(Math.max(0, purged.at - committed))
    await Bun.sleep(200)
  }
  const p = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(share * values.length) - 1)] ?? NaN
  return { fresh50: p(latencies, 0.5), fresh99: p(latencies, 0.99), purge50: p(purgeDelays, 0.5), purge99: p(purgeDelays, 0.99), write50: p(writes, 0.5), write99: p(writes, 0.99) }
}

async function seed(sql: ReturnType<typeof connectDatabase>): Promise<void> {
  for (const slug of [TYPE, ...BULK_TYPES]) {
    await sql`insert into content_types (slug, name) values (${slug}, ${slug})`
    await sql`
      with made as (
        insert into entries (content_type_id, status, published_at)
        select (select id from content_types where slug = ${slug}), 'published', now() - interval '1 day'
        from generate_series(1, 1000)
        returning id
      )
      insert into entry_translations (entry_id, language_code, title, slug)
      select id, (select code from languages where is_default), 'entry ' || id, 'entry-' || id
      from made
    `
  }
}

/** Varnish's own count of the requests from clients. */
async function varnishCounters(workDir: string): Promise<{ client: number }> {
  const text = (await Bun.$`varnishstat -n ${workDir} -1 -f MAIN.client_req`.quiet()).stdout.toString()
  return { client: Number(/^MAIN\.client_req\s+(\d+)/m.exec(text)?.[1] ?? NaN) }
}
