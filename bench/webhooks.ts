/**
 * `bun run bench:webhooks`, part of `bun run bench`: C57, webhooks.
 *
 * A database of its own (`vitrine_bench_webhooks`, made afresh: 1 000 posts
 * that are read, 10 000 entries of a type `bench-hook` that are written), one
 * service (`bun src/main.ts`, WEBHOOK_ALLOW_PRIVATE=true) and a local receiver
 * in this process that answers 204 to everything:
 * 1. latency: 100 commits 20 ms apart, each a title of one `bench-hook` entry;
 *    from the commit's return to its `entry.updated` arriving (p50, p99;
 *    target p99 ≤ 1 s);
 * 2. throughput: one statement re-titling the 10 000 `bench-hook` entries;
 *    from its commit to the 10 000th message (target < 30 s);
 * 3. the read path: warm cache hits of the posts' page 1 (wrk or autocannon,
 *    BENCH_SECONDS/2 s each), alternating, 5 rounds: "off" with no endpoint,
 *    "on" with one endpoint, and in both a writer re-titling a `bench-hook`
 *    entry every 50 ms (so that "on" delivers 20 messages a second); the
 *    ratio on ÷ off (target ≥ 0.97).
 * Written to bench/webhooks-last-run.md too.
 *
 * DATABASE_URL: the server to make the database on (default: this machine's, postgres://postgres@127.0.0.1:5432/postgres).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect'
import { migrate } from '../src/db/migrate'
import { LOAD_TOOL, load, median, readSeconds } from './load'
import { startBenchService } from './service'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const NAME = 'vitrine_bench_webhooks'
const WRITTEN = 10_000
const HALF = Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 2)
const ROUNDS = 5
const PAGE_1 = '/api/v1/content/post'

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

/** Messages received, by entry id, with when (performance.now()). */
const arrivals: { id: number; at: number }[] = []
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const message = JSON.parse(await request.text())
    arrivals.push({ id: message.data.id, at: performance.now() })
    return new Response(null, { status: 204 })
  },
})

const admin = connectDatabase(SERVER, { max: 1 })
await admin.unsafe(`drop database if exists ${NAME} with (force)`)
await admin.unsafe(`create database ${NAME}`)
const url = Object.assign(new URL(SERVER), { pathname: `/${NAME}` }).toString()
const sql = connectDatabase(url, { max: 2 })
let service: Awaited<ReturnType<typeof startBenchService>> | undefined
try {
  await migrate(sql)
  await sql`insert into content_types (slug, name) values ('bench-hook', 'Bench hook') on conflict do nothing`
  await sql`
    insert into entries (content_type_id, status, published_at, created_at)
    select (select id from content_types where slug = case when g <= 1000 then 'post' else 'bench-hook' end), 'published', now() - interval '1 minute' * g, now()
    from generate_series(1, ${1000 + WRITTEN}) g
  `
  await sql`insert into entry_translations (entry_id, language_code, title, slug) select id, 'en', 'Title ' || id, 'entry-' || id from entries`
  const hooked = (await sql<{ id: number }[]>`select e.id::float8 as id from entries e join content_types t on t.id = e.content_type_id where t.slug = 'bench-hook' order by e.id`).map((row) => row.id)
  service = await startBenchService({ databaseUrl: url, env: { WEBHOOK_ALLOW_PRIVATE: 'true', CACHE: 'on', ...(process.env.BENCH_LOG ? { LOG_LEVEL: process.env.BENCH_LOG } : {}) } })
  const [endpoint] = await sql<{ id: number }[]>`insert into webhooks (url) values (${`http://127.0.0.1:${receiver.port}/hook`}) returning id::float8 as id`
  for (let tries = 0; (await sql`select 1 from webhook_reader`).length === 0; tries++) {
    if (tries > 300) throw new Error('The service never started delivering.')
    await Bun.sleep(100)
  }

  say(`# Webhooks (C57), ${new Date().toISOString().slice(0, 16)}Z`)
  say()
  say(`\`${NAME}\`: 1 000 posts read, ${WRITTEN} \`bench-hook\` entries written; one service, a local receiver answering 204.`)
  say()

  // 1. Latency.
  const latencies: number[] = []
  for (let index = 0; index < 100; index++) {
    const id = hooked[index]!
    await sql`update entry_translations set title = ${`Latency ${index}`} where entry_id = ${id}`
    const committed = performance.now()
    for (;;) {
      const arrived = arrivals.find((each) => each.id === id && each.at >= committed)
      if (arrived) {
        latencies.push(arrived.at - committed)
        break
      }
      if (performance.now() - committed > 10_000) throw new Error(`No message for entry ${id} within 10 s.`)
      await Bun.sleep(1)
    }
    await Bun.sleep(20)
  }
  latencies.sort((a, b) => a - b)
  const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1]!
  say(`- Commit → message, 100 commits 20 ms apart: p50 ${latencies[49]!.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (target p99 ≤ 1 000 ms: ${p99 <= 1000 ? 'met' : 'missed'}).`)

  // 2. Throughput.
  arrivals.length = 0
  await sql`update entry_translations set title = title || ' (bulk)' where entry_id = any (${`{${hooked.join(',')}}`}::int8[])`
  const bulkCommitted = performance.now()
  while (arrivals.length < WRITTEN) {
    if (performance.now() - bulkCommitted > 300_000) throw new Error(`Only ${arrivals.length} of ${WRITTEN} messages in 5 minutes.`)
    await Bun.sleep(20)
  }
  const bulkSeconds = (arrivals[WRITTEN - 1]!.at - bulkCommitted) / 1000
  say(`- ${WRITTEN} changes in one statement → ${WRITTEN} messages delivered in ${bulkSeconds.toFixed(1)} s (${Math.round(WRITTEN / bulkSeconds)}/s; target < 30 s: ${bulkSeconds < 30 ? 'met' : 'missed'}).`)

  // 3. The read path, with a writer going on in both.
  let writing = true
  const writer = (async () => {
    for (let index = 0; writing; index++) {
      await sql`update entry_translations set title = ${`Steady ${index}`} where entry_id = ${hooked[index % hooked.length]!}`
      await Bun.sleep(50)
    }
  })()
  await load(LOAD_TOOL, service.base + PAGE_1, 1)
  const rounds: { off: number; on: number }[] = []
  const measure = async (enabled: boolean) => {
    await sql`update webhooks set enabled = ${enabled} where id = ${endpoint!.id}`
    await Bun.sleep(500)
    const before = arrivals.length
    const rps = (await load(LOAD_TOOL, service!.base + PAGE_1, HALF)).rps
    return { rps, delivered: arrivals.length - before }
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Which goes first alternates: the second of two measurements is not always the same one.
    const [first, second] = round % 2 === 0 ? [await measure(false), await measure(true)] : [await measure(true), await measure(false)].reverse()
    const off = first!.rps
    const on = second!.rps
    rounds.push({ off, on })
    say(`- Round ${round + 1} (${round % 2 === 0 ? 'off first' : 'on first'}): page 1 (warm hits) ${Math.round(off)} req/s with no endpoint, ${Math.round(on)} with one (${second!.delivered} messages delivered meanwhile).`)
  }
  writing = false
  await writer
  const ratio = median(rounds.map((round) => round.on / round.off))
  say(`- Read path with webhooks on ÷ off: ${ratio.toFixed(3)} (median of ${ROUNDS} alternated rounds; target ≥ 0.97: ${ratio >= 0.97 ? 'met' : 'missed'}).`)
} finally {
  service?.process.kill('SIGTERM')
  await service?.process.exited
  receiver.stop(true)
  await sql.end()
  await admin.unsafe(`drop database if exists ${NAME} with (force)`)
  await admin.end()
}
await writeFile(join(import.meta.dir, 'webhooks-last-run.md'), lines.join('\n') + '\n')
