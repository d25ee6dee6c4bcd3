/**
 * `bun run soak [minutes]` (default 2): the real service behind a TCP fault
 * proxy, 64 clients mixing routes, and a fault injected every 10 s in turn.
 * Prints what clients saw by status, latency, the recovery after each fault,
 * and the service's memory at the start and the end. Exits non-zero when an
 * answer was wrong (another request's, or a status other than 200, 404 or 503),
 * when the service died, or when a recovery took more than a second.
 * Runs on its own embedded PostgreSQL under a temporary folder.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect'
import { startEmbeddedDatabase } from '../src/db/embedded'
import { migrate } from '../src/db/migrate'
import { percentile, recoveryMs, runCorrelatedLoad, seedCorrelationSite } from '../test/support/correlated-load'
import { startFaultProxy } from '../test/support/fault-proxy'
import { startService } from '../test/support/service'

const minutes = Number(process.argv[2] ?? '2')
if (!(minutes > 0 && minutes <= 120)) {
  console.error(`soak: the number of minutes must be from 0 to 120, not "${process.argv[2]}".`)
  process.exit(2)
}
const CLIENTS = 64
const FAULT_EVERY_MS = 10_000
const FAULT_LASTS_MS = 2_000

const dataDir = await mkdtemp(join(tmpdir(), 'vitrine-soak-'))
await chmod(dataDir, 0o755)
const cluster = await startEmbeddedDatabase({ dataDir, preferredPort: 0 })
// The content lives in a database of its own: a database cannot refuse connections to the session that asks.
const admin = connectDatabase(cluster.url, { max: 2 })
await admin`create database vitrine_soak`
const contentUrl = new URL(cluster.url)
contentUrl.pathname = '/vitrine_soak'
const content = connectDatabase(contentUrl.toString(), { max: 1 })
await migrate(content)
const expected = await seedCorrelationSite(content, 200)
await content.end()
const proxy = await startFaultProxy('127.0.0.1', Number(new URL(cluster.url).port))
// CACHE=off: the soak is about the database path; answers from memory would hide the faults.
const service = await startService({ DATABASE_URL: proxy.url(contentUrl.toString()), PORT: '0', LOG_LEVEL: 'info', DATABASE_TIMEOUT_MS: '1000', CACHE: 'off' }, { keepOutput: false })
const servicePid = service.process.pid

const terminateBackends = () => admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine'`
const faults: { name: string; begin: () => Promise<unknown>; end: () => Promise<unknown> }[] = [
  { name: 'connections refused', begin: async () => { await proxy.setMode('refuse'); proxy.resetAll() }, end: () => proxy.setMode('forward') },
  { name: 'database hangs', begin: () => proxy.setMode('hang'), end: () => proxy.setMode('forward') },
  { name: 'resets mid-answer', begin: () => proxy.setMode('reset-mid-answer', { resetAfterBytes: 300 }), end: () => proxy.setMode('forward') },
  { name: 'backends terminated', begin: terminateBackends, end: async () => {} },
  { name: 'allow_connections false', begin: async () => { await admin`alter database vitrine_soak with allow_connections false`; await terminateBackends() }, end: () => admin`alter database vitrine_soak with allow_connections true` },
  { name: 'slow network', begin: () => proxy.setMode('slow', { delayMs: 150 }), end: () => proxy.setMode('forward') },
]

/** Resident memory of the service and the processes it started, in MB. */
function serviceRssMb(): number {
  const pids = [servicePid]
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const parent = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ')[1])
      if (pids.includes(parent)) pids.push(Number(name))
    } catch {
      // The process ended while we looked.
    }
  }
  let kb = 0
  for (const pid of pids) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
    } catch {
      // Gone.
    }
  }
  return Math.round(kb / 1024)
}

const rssStart = serviceRssMb()
const origin = performance.now()
const durationMs = minutes * 60_000
const load = runCorrelatedLoad(service.url, expected, CLIENTS, Bun.sleep(durationMs), origin)
const recoveries: { name: string; faultEnd: number; nextFault: number }[] = []
for (let at = FAULT_EVERY_MS, n = 0; at + FAULT_LASTS_MS + 3_000 < durationMs; at += FAULT_EVERY_MS, n++) {
  await Bun.sleep(Math.max(0, at - (performance.now() - origin)))
  const fault = faults[n % faults.length]
  await fault.begin()
  await Bun.sleep(FAULT_LASTS_MS)
  await fault.end()
  recoveries.push({ name: fault.name, faultEnd: performance.now() - origin, nextFault: at + FAULT_EVERY_MS })
}
const report = await load
if (process.env.SOAK_TRACE) {
  const seconds = new Map<number, Record<string, number>>()
  for (const record of report.records) {
    const second = Math.floor(record.start / 1000)
    const row = seconds.get(second) ?? {}
    row[record.status] = (row[record.status] ?? 0) + 1
    seconds.set(second, row)
  }
  for (const [second, row] of [...seconds].sort((a, b) => a[0] - b[0])) console.log(second, JSON.stringify(row))
  console.log(recoveries)
}
const rssEnd = serviceRssMb()
const alive = service.process.exitCode === null

const byStatus = Object.entries(Object.groupBy(report.records, (record) => String(record.status))).map(([status, records]) => `${status}: ${records!.length}`)
const latencies = report.records.filter((record) => record.status === 200).map((record) => record.end - record.start)
const recoveryRows = recoveries.map(({ name, faultEnd, nextFault }) => ({ name, ms: recoveryMs(report.records, faultEnd, nextFault) }))
const worst = Math.max(0, ...recoveryRows.map((row) => row.ms))
console.log(`
| soak, ${minutes} min, ${CLIENTS} clients, a fault every ${FAULT_EVERY_MS / 1000} s lasting ${FAULT_LASTS_MS / 1000} s | |
| --- | --- |
| requests | ${report.records.length} (${Math.round(report.records.length / (durationMs / 1000))}/s) |
| by status | ${byStatus.join(', ')} |
| wrong answers (another request's) | ${report.misattributed.length} |
| unexpected statuses or bodies | ${report.unexpected.length} |
| connection-level errors seen by clients | ${report.transportErrors} |
| latency of 200s, p50 / p99 | ${percentile(latencies, 50).toFixed(1)} ms / ${percentile(latencies, 99).toFixed(1)} ms |
| recovery after each fault ended (ms) | ${recoveryRows.map((row) => `${row.name} ${Math.round(row.ms)}`).join('; ')} |
| worst recovery | ${Math.round(worst)} ms |
| service memory (RSS) start / end | ${rssStart} MB / ${rssEnd} MB |
| service still running | ${alive ? 'yes' : 'NO'} |
`)
for (const line of [...report.misattributed, ...report.unexpected].slice(0, 10)) console.log(line)

await service.stop()
await proxy.close()
await admin.end()
await cluster.stop()
await rm(dataDir, { recursive: true, force: true })
process.exit(alive && report.misattributed.length === 0 && report.unexpected.length === 0 && report.transportErrors === 0 && worst <= 1000 ? 0 : 1)
