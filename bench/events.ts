/**
 * `bun run bench:events`, part of `bun run bench`: C49, the event stream.
 *
 * On `vitrine_bench_100000` (bench/dataset.ts), with a content type of its own
 * (`bench-event`, 1 000 live entries, made once) so that its writes leave the
 * benchmark's posts alone, one service with the cache on:
 * 1. latency: one subscriber to `bench-event`; 100 commits 20 ms apart, each
 *    an update of one entry; from the moment the update is sent to the event
 *    naming it (p50, p99; target p99 ≤ 100 ms);
 * 2. idle subscribers: the service's RSS with none, then with EVENTS_IDLE
 *    (default 10 000) streams open (bench/event-clients.ts, another process;
 *    target ≤ 150 MB more), and page-1 cached throughput with none and with
 *    them, alternating, 2 rounds (target within 10%);
 * 3. stalled subscribers: bulk updates of the 1 000 entries (one event of
 *    1 000 ids, ~7 KB, each) for 30 s, first with no other subscriber, then
 *    with 100 streams that stop reading: how many the service dropped, its RSS
 *    at the start and its highest, and the latency of a subscriber that reads
 *    (as in 1, 150 ms apart) meanwhile, with and without them.
 *    The kernel's socket buffers take a few MB per connection before the
 *    service's own queue (256 KiB) fills: a stalled client is dropped only past
 *    both (test/events.test.ts checks the drop itself, in process).
 * Written to bench/events-last-run.md too.
 *
 * BENCH_SECONDS (default 10): each throughput measurement takes ceil(BENCH_SECONDS / 2) s.
 * DATABASE_URL: the server to keep the database on; unset: the embedded PostgreSQL under DATA_DIR.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { ensureBenchDatabase } from './dataset'
import { load, LOAD_TOOL, median, readSeconds } from './load'
import { startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZE = 100_000
const TYPE = 'bench-event'
const ENTRIES = 1000
const HALF = Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 2)
const IDLE = Number(process.env.EVENTS_IDLE ?? 10_000)
const STALLED = 100
const STALLED_SECONDS = 30
const PAGE_1 = '/api/v1/content/post'
const { target, admin, close } = await setUpBench()
const tool = LOAD_TOOL

const children: ReturnType<typeof Bun.spawn>[] = []
const lines: string[] = []
const say = (line: string) => (console.log(line), lines.push(line))
try {
  const database = await ensureBenchDatabase(admin, target.url, SIZE)
  const writer = connectDatabase(database.url, { max: 2 })
  const ids = await benchEntries(writer)
  const service = await startBenchService({ databaseUrl: database.url, env: { CACHE: 'on', EVENTS_MAX_SUBSCRIBERS: String(IDLE + STALLED + 10) } })
  children.push(service.process)
  await load(tool, service.base + PAGE_1, 1)
  say(`# The event stream (C49), ${new Date().toISOString().slice(0, 16)}Z`)
  say('')
  say(`\`vitrine_bench_${SIZE}\` (${database.how}), type \`${TYPE}\` of ${ENTRIES} entries; page 1 by ${tool} at 32 connections, ${HALF} s a measurement.`)
  say('')

  const quiet = await latency(service.base, writer, ids, 100)
  say(`- Latency, commit to event, 100 commits: p50 ${quiet.p50.toFixed(1)} ms, p99 ${quiet.p99.toFixed(1)} ms (target p99 ≤ 100 ms: ${quiet.p99 <= 100 ? 'met' : 'missed'}).`)

  const rssNone = await rss(service.process.pid)
  const rounds: { none: number; idle: number; rssIdle: number }[] = []
  for (let round = 0; round < 2; round++) {
    const none = (await load(tool, service.base + PAGE_1, HALF)).rps
    const clients = await startClients(service.base, IDLE, 'idle')
    const rssIdle = await rss(service.process.pid)
    const idle = (await load(tool, service.base + PAGE_1, HALF)).rps
    clients.process.kill('SIGTERM')
    await clients.process.exited
    rounds.push({ none, idle, rssIdle })
    say(`- Round ${round + 1}: page 1 ${Math.round(none)} req/s with no subscriber, ${Math.round(idle)} with ${IDLE} idle; RSS ${mb(rssNone)} → ${mb(rssIdle)} MB.`)
    await Bun.sleep(500)
  }
  const grown = Math.max(...rounds.map((round) => round.rssIdle)) - rssNone
  const ratio = median(rounds.map((round) => round.idle)) / median(rounds.map((round) => round.none))
  say(`- ${IDLE} idle subscribers: RSS +${mb(grown)} MB (target ≤ 150: ${grown <= 150 * 1024 * 1024 ? 'met' : 'missed'}); page-1 throughput ${ratio.toFixed(2)} of none (target ≥ 0.90: ${ratio >= 0.9 ? 'met' : 'missed'}).`)

  // Bulk writes with no stalled subscriber, then with STALLED of them: what they cost the one that reads.
  for (const count of [0, STALLED]) {
    const stalled = count ? await startClients(service.base, count, 'stalled', TYPE) : null
    const rssBefore = await rss(service.process.pid)
    let rssHighest = rssBefore
    let bulk = 0
    const until = performance.now() + STALLED_SECONDS * 1000
    const sampling = setInterval(async () => (rssHighest = Math.max(rssHighest, await rss(service.process.pid))), 250)
    const bulkWrites = (async () => {
      while (performance.now() < until) {
        bulk++
        await writer`update entries set created_at = created_at where content_type_id = (select id from content_types where slug = ${TYPE})`
      }
    })()
    const meanwhile = await latency(service.base, writer, ids, 100, 150)
    await bulkWrites
    clearInterval(sampling)
    let dropped = 0
    if (stalled) {
      stalled.process.kill('SIGUSR1')
      await Bun.sleep(3000)
      dropped = stalled.closed()
      stalled.process.kill('SIGTERM')
      await stalled.process.exited
    }
    say(
      `- ${count} stalled subscribers, ${bulk} bulk writes of ${ENTRIES} entries in ${STALLED_SECONDS} s (${mb(meanwhile.bytes)} MB of events to each subscriber): ${dropped} dropped; RSS ${mb(rssBefore)} MB, at most ${mb(rssHighest)} MB; a reading subscriber's latency meanwhile: p50 ${meanwhile.p50.toFixed(1)} ms, p99 ${meanwhile.p99.toFixed(1)} ms.`,
    )
  }
  await writeFile(join(ROOT, 'bench', 'events-last-run.md'), lines.join('\n') + '\n')
  await writer.end()
} finally {
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => child.exited))
  await close()
}

/** The benchmark's own type and its live entries (made once, kept). */
async function benchEntries(sql: Sql): Promise<number[]> {
  await sql`insert into content_types (slug, name) values (${TYPE}, 'Bench events') on conflict (slug) do nothing`
  const [{ count }] = await sql<{ count: number }[]>`select count(*)::int as count from entries where content_type_id = (select id from content_types where slug = ${TYPE})`
  if (count < ENTRIES) {
    await sql`
      with made as (
        insert into entries (content_type_id, status, published_at)
        select (select id from content_types where slug = ${TYPE}), 'published', now() - interval '1 day'
        from generate_series(1, ${ENTRIES - count})
        returning id
      )
      insert into entry_translations (entry_id, language_code, title, slug)
      select id, (select code from languages where is_default), 'event ' || id, 'event-' || id
      from made
    `
  }
  return (await sql<{ id: number }[]>`select id from entries where content_type_id = (select id from content_types where slug = ${TYPE}) order by id`).map((row) => row.id)
}

/** `commits` updates of one entry each, `gapMs` apart, and when a subscriber to the type hears of each. */
async function latency(base: string, sql: Sql, ids: number[], commits: number, gapMs = 20): Promise<{ p50: number; p99: number; bytes: number }> {
  const response = await fetch(`${base}/api/v1/events?types=${TYPE}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const sent = new Map<number, number>()
  const heard: number[] = []
  let buffer = ''
  let bytes = 0
  let reading = true
  const listening = (async () => {
    while (reading) {
      const { value, done } = await reader.read()
      if (done) break
      bytes += value.byteLength
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (!data) continue
        const now = performance.now()
        const { ids: named } = JSON.parse(data) as { ids: number[] | null }
        for (const [id, at] of sent) {
          if (named === null || named.includes(id)) {
            heard.push(now - at)
            sent.delete(id)
          }
        }
      }
    }
  })()
  await Bun.sleep(200)
  for (let i = 0; i < commits; i++) {
    const id = ids[i % ids.length]!
    sent.set(id, performance.now())
    await sql`update entry_translations set title = ${`latency ${i} ${Date.now()}`} where entry_id = ${id}`
    await Bun.sleep(gapMs)
  }
  const deadline = performance.now() + 5000
  while (sent.size > 0 && performance.now() < deadline) await Bun.sleep(10)
  reading = false
  await reader.cancel()
  await listening.catch(() => {})
  // An event never heard counts as the whole wait.
  for (const _ of sent) heard.push(5000)
  heard.sort((a, b) => a - b)
  return { p50: heard[Math.floor(heard.length * 0.5)]!, p99: heard[Math.min(heard.length - 1, Math.floor(heard.length * 0.99))]!, bytes }
}

async function startClients(base: string, count: number, mode: 'idle' | 'stalled', types = '') {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'event-clients.ts'), base, String(count), mode, types], { stdout: 'pipe', stderr: 'inherit' })
  children.push(child)
  let closed = 0
  let opened = false
  const decoder = new TextDecoder()
  void (async () => {
    for await (const chunk of child.stdout) {
      for (const line of decoder.decode(chunk).split('\n')) {
        if (line.startsWith('open ')) opened = true
        if (line.startsWith('closed ')) closed = Number(line.slice(7))
      }
    }
  })()
  while (!opened) {
    if (child.exitCode !== null) throw new Error(`the ${mode} subscribers could not connect (exit ${child.exitCode})`)
    await Bun.sleep(50)
  }
  return { process: child, closed: () => closed }
}

async function rss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(0)
}

