/**
 * `bun run bench:replicas`, the last part of `bun run bench`: C50, read
 * replicas. On `vitrine_bench_10000` (bench/dataset.ts; kept between runs) it
 * makes two streaming standbys of the cluster (test/support/standby.ts: real
 * replicas on ports of their own) and starts the service with
 * DATABASE_READ_URLS naming both, then:
 * 1. spread: uncached page 1 at 32 connections; the statements each replica
 *    ran (its pg_stat_database transactions, health checks included).
 *    Target: within 60/40.
 * 2. a replica killed (`pg_ctl stop -m immediate`) a third of the way through
 *    32 client loops asking uncached lists and entries. Targets: at most 0.1%
 *    503s, no wrong answer (each compared with the answer before the run).
 * 3. replay paused for 10 s on the other replica while a writer retitles an
 *    entry every 50 ms and 32 loops read it (the cache on). An answer is
 *    stale when its title is older than a write that committed at least
 *    STALE_MARGIN_MS before the request was sent: with the two cores
 *    saturated, a notification reaches the service's event loop up to some
 *    30 ms after the writer's commit returned, without replicas as with them,
 *    so a tighter margin would count that; an answer from the paused replica
 *    would be seconds behind. Target: none. Also printed: how far behind a
 *    commit the most belated answer was.
 * Written to bench/replicas-last-run.md too.
 *
 * BENCH_SECONDS (default 10): parts 1 and 2 take that long each.
 * DATABASE_URL: the server to keep the database on (its replicas copy the
 * whole cluster); unset: the embedded PostgreSQL under DATA_DIR.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { startStandby, type Standby } from '../test/support/standby'
import { ensureBenchDatabase } from './dataset'
import { CONNECTIONS, load, LOAD_TOOL, readSeconds } from './load'
import { startBenchService } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZE = 10_000
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
const PAUSE_SECONDS = 10
const STALE_MARGIN_MS = 250
const PAGE_1 = '/api/v1/content/post'
const { target, admin, close } = await setUpBench()
const tool = LOAD_TOOL

const standbys: Standby[] = []
const services: ReturnType<typeof Bun.spawn>[] = []
let report = ''
try {
  const database = await ensureBenchDatabase(admin, target.url, SIZE)
  const name = new URL(database.url).pathname.slice(1)
  for (let made = 0; made < 2; made++) standbys.push(await startStandby(database.url))
  const readUrls = standbys.map((standby) => standby.url(name)).join(',')
  const start = (env: Record<string, string>) => startBenchService({ databaseUrl: database.url, env: { DATABASE_READ_URLS: readUrls, ...env } })

  // 1. Spread.
  const uncached = await start({ CACHE: 'off' })
  services.push(uncached.process)
  await waitServing(uncached.base, 2)
  await load(tool, uncached.base + PAGE_1, 1)
  const before = await Promise.all(standbys.map((standby) => transactions(standby.admin, name)))
  const spread = await load(tool, uncached.base + PAGE_1, SECONDS)
  // Each backend sends its counts at most once a second.
  await Bun.sleep(1500)
  const after = await Promise.all(standbys.map((standby) => transactions(standby.admin, name)))
  const ran = after.map((count, index) => count - before[index])
  const shares = ran.map((count) => count / (ran[0] + ran[1]))
  console.log(`spread: ${Math.round(spread.rps)} req/s uncached, replicas ran ${ran.join(' / ')} transactions (${shares.map((share) => (share * 100).toFixed(1)).join('/')})`)

  // 2. A replica killed under 32 clients.
  const paths = [PAGE_1, `${PAGE_1}?page=2`, ...(await slugs(database.url, 6)).map((slug) => `${PAGE_1}/${slug}`)]
  const expected = new Map<string, string>()
  for (const path of paths) {
    const response = await fetch(uncached.base + path)
    expected.set(path, `${response.status} ${await response.text()}`)
  }
  const killing = { at: performance.now() + (SECONDS * 1000) / 3, done: undefined as Promise<void> | undefined }
  const killed = await clients(uncached.base, SECONDS, paths, (path, status, body) => {
    if (killing.done === undefined && performance.now() >= killing.at) killing.done = standbys[1].kill()
    return `${status} ${body}` !== expected.get(path) ? 'wrong' : undefined
  })
  await killing.done
  console.log(`replica killed: ${killed.total} requests, ${killed.unavailable} 503, ${killed.wrong} wrong, ${killed.failed} without an answer`)

  // 3. Replay paused under writes, the cache on.
  const cached = await start({ CACHE: 'on' })
  services.push(cached.process)
  await waitServing(cached.base, 1)
  const [slug] = await slugs(database.url, 1)
  const paused = await pausedUnderWrites(cached.base, database.url, standbys[0], slug)
  console.log(`replay paused ${PAUSE_SECONDS} s: ${paused.writes} writes, ${paused.reads} answers, ${paused.stale} stale, ${paused.unavailable} 503, ${paused.hits} from memory, the most belated ${Math.round(paused.maxBehindMs)} ms behind a commit`)

  report = [
    `# Read replicas (C50), ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `\`vitrine_bench_${SIZE}\` (${database.how}); two streaming standbys of the cluster on this machine; ${tool}, ${CONNECTIONS} connections, ${SECONDS} s.`,
    '',
    '| part | result | target |',
    '| --- | --- | --- |',
    `| 1. spread, uncached page 1 | ${Math.round(spread.rps)} req/s; replicas ran ${ran.join(' / ')} transactions: ${shares.map((share) => (share * 100).toFixed(1)).join(' / ')} % | within 60/40: ${Math.max(...shares) <= 0.6 ? 'met' : 'missed'} |`,
    `| 2. a replica killed under ${CONNECTIONS} clients | ${killed.total} requests, ${killed.unavailable} 503 (${((killed.unavailable / killed.total) * 100).toFixed(3)} %), ${killed.wrong} wrong, ${killed.failed} without an answer | ≤ 0.1 % 503 and 0 wrong: ${killed.unavailable / killed.total <= 0.001 && killed.wrong === 0 && killed.failed === 0 ? 'met' : 'missed'} |`,
    `| 3. replay paused ${PAUSE_SECONDS} s under writes (cache on) | ${paused.writes} writes, ${paused.reads} answers (${paused.hits} from memory), ${paused.stale} stale (older than a write committed ≥ ${STALE_MARGIN_MS} ms before the request; the most belated answer ${Math.round(paused.maxBehindMs)} ms behind a commit), ${paused.unavailable} 503 | 0 stale: ${paused.stale === 0 ? 'met' : 'missed'} |`,
  ].join('\n')
  console.log(`\n${report}`)
  await writeFile(join(ROOT, 'bench', 'replicas-last-run.md'), report + '\n')
} finally {
  for (const service of services) service.kill('SIGTERM')
  await Promise.all(services.map((service) => service.exited))
  for (const standby of standbys) await standby.remove()
  await close()
}

/** Transactions the standby ran in the database (its pg_stat_database row). */
async function transactions(sql: Sql, database: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`select xact_commit + xact_rollback as count from pg_stat_database where datname = ${database}`
  return row.count
}

/** Waits until /readyz lists `count` replicas as serving. */
async function waitServing(base: string, count: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ready = (await (await fetch(`${base}/readyz`)).json()) as { replicas?: { serving: boolean }[] }
    if (ready.replicas?.filter((replica) => replica.serving).length === count) return
    await Bun.sleep(100)
  }
  throw new Error(`${base}/readyz never listed ${count} serving replicas.`)
}

async function slugs(url: string, count: number): Promise<string[]> {
  const sql = connectDatabase(url, { max: 1 })
  try {
    const rows = await sql<{ slug: string }[]>`
      select t.slug
      from entries e
      join entry_translations t on t.entry_id = e.id
      join content_types ct on ct.id = e.content_type_id
      where ct.slug = 'post' and e.status = 'published' and e.published_at <= now() and t.slug is not null
        and t.language_code = (select code from languages where is_default)
      order by e.id
      limit ${count}
    `
    return rows.map((row) => row.slug)
  } finally {
    await sql.end()
  }
}

/** CONNECTIONS loops asking `paths` in turn for `seconds`; `judge` says whether an answer other than a 503 is wrong; `failed`: no answer at all. */
async function clients(base: string, seconds: number, paths: string[], judge: (path: string, status: number, body: string) => 'wrong' | undefined) {
  const result = { total: 0, unavailable: 0, wrong: 0, failed: 0 }
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, client) => {
      for (let turn = client; performance.now() < end; turn++) {
        const path = paths[turn % paths.length]
        result.total++
        try {
          const response = await fetch(base + path)
          const body = await response.text()
          if (response.status === 503) result.unavailable++
          else if (judge(path, response.status, body) === 'wrong') result.wrong++
        } catch {
          result.failed++
        }
      }
    }),
  )
  return result
}

/**
 * Replay paused on `standby` for PAUSE_SECONDS while a writer retitles the
 * entry every 50 ms and CONNECTIONS loops read it; then replay resumes.
 */
async function pausedUnderWrites(base: string, url: string, standby: Standby, slug: string) {
  const writer = connectDatabase(url, { max: 1 })
  const path = `${PAGE_1}/${slug}`
  const result = { writes: 0, reads: 0, stale: 0, unavailable: 0, hits: 0, maxBehindMs: 0 }
  /** Write n committed at committedAt[n]. */
  const committedAt: number[] = []
  const retitle = async (n: number) => {
    await writer`update entry_translations set title = ${`bench write ${n}`} where slug = ${slug}`
    committedAt[n] = performance.now()
  }
  try {
    await retitle(0)
    await standby.pauseReplay()
    const end = performance.now() + PAUSE_SECONDS * 1000
    const writing = (async () => {
      for (let n = 1; performance.now() < end; n++) {
        await retitle(n)
        result.writes = n
        await Bun.sleep(50)
      }
    })()
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < end) {
          const sentAt = performance.now()
          // The latest write committed STALE_MARGIN_MS before the request: its notification is in.
          let latest = committedAt.length - 1
          while (latest > 0 && committedAt[latest] > sentAt - STALE_MARGIN_MS) latest--
          const response = await fetch(base + path)
          const body = await response.text()
          result.reads++
          if (response.status === 503) {
            result.unavailable++
            continue
          }
          if (response.headers.get('x-cache') === 'HIT') result.hits++
          const seen = Number(/bench write (\d+)/.exec(JSON.parse(body).data?.title ?? '')?.[1] ?? -1)
          if (seen < latest) result.stale++
          // How long before the request the first write this answer misses had committed.
          const missed = committedAt[seen + 1]
          if (missed !== undefined && missed < sentAt) result.maxBehindMs = Math.max(result.maxBehindMs, sentAt - missed)
        }
      }),
    )
    await writing
  } finally {
    await standby.resumeReplay()
    await writer.end()
  }
  return result
}
