import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../src/db/embedded'
import { routeTemplates } from '../src/http/route-template'
import { CONTENT_ITEM_HOOK } from '../src/hooks/extension'
import { FilterRegistry } from '../src/hooks/registry'
import { formatFor, writeExposition } from '../src/metrics/exposition'
import { recordMetrics, registry, resetMetrics } from '../src/metrics/families'
import { mergeSnapshots, Registry } from '../src/metrics/registry'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'
import { replicatedTestApp } from './support/replicated-app'
import { startService, type RunningService } from './support/service'
import { waitFor } from './support/wait'

/** C53, issue 33: the metrics port, its families, and what a scrape reports under WORKERS. */
const PROMTOOL = Bun.which('promtool')
const PROMETHEUS = Bun.which('prometheus')
if (!PROMTOOL) console.log('metrics: the promtool checks are skipped, no promtool on PATH (apt-get install prometheus).')
if (!PROMETHEUS) console.log('metrics: the real Prometheus scrape is skipped, no prometheus on PATH (apt-get install prometheus).')

const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
const scratch = mkdtempSync(join(tmpdir(), 'vitrine-metrics-'))
afterAll(async () => {
  await db.sql.end()
  rmSync(scratch, { recursive: true, force: true })
})

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** The samples of an exposition in the text format. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[name] = value
    samples.push({ name: match[1], labels, value: Number(match[3]) })
  }
  return samples
}

function sumOf(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  return samples.filter((sample) => sample.name === name && Object.entries(where).every(([key, value]) => sample.labels[key] === value)).reduce((sum, sample) => sum + sample.value, 0)
}

async function scrape(port: number, accept?: string): Promise<{ text: string; type: string | null; samples: Sample[] }> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: accept ? { accept } : {} })
  expect(response.status).toBe(200)
  const text = await response.text()
  return { text, type: response.headers.get('content-type'), samples: accept?.includes('openmetrics') ? [] : parseExposition(text) }
}

async function promtool(args: string[], input?: string): Promise<{ code: number; output: string }> {
  const child = Bun.spawn([PROMTOOL!, ...args], { stdin: input === undefined ? 'ignore' : new Blob([input]), stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, output: stdout + stderr }
}

/** `count` requests, each on a connection of its own (so that WORKERS spreads them); their statuses. */
async function requestMany(url: string, count: number): Promise<number[]> {
  const statuses: number[] = []
  for (let index = 0; index < count; index++) {
    const response = await fetch(url, { headers: { connection: 'close' } })
    await response.arrayBuffer()
    statuses.push(response.status)
  }
  return statuses
}

const REQUESTS = 'http_server_request_duration_seconds_count'
/** The request histogram's labels, which the dashboard's expressions also name. */
const LABELS = new Set(['http_request_method', 'http_route', 'http_response_status_code'])
const ENTRY_ROUTE = '/api/v1/content/{type}/{slug}'

describe('C53: the metrics port of one process', () => {
  let service: RunningService
  let metricsPort: number

  test('starts with METRICS_PORT; the public port answers 404 for /metrics, the metrics port nothing but /metrics', async () => {
    metricsPort = await freePort()
    service = await startService({ DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', METRICS_PORT: String(metricsPort) })
    expect((await fetch(`${service.url}/metrics`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${metricsPort}/`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/v1/content/post`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: 'POST' })).status).toBe(405)
    const { type } = await scrape(metricsPort)
    expect(type).toBe('text/plain; version=0.0.4; charset=utf-8')
    // Answers are kept only while the change notifications are heard (C36).
    await waitFor('the change listener is up', async () => sumOf((await scrape(metricsPort)).samples, 'vitrine_change_listener_up') === 1)
  }, 60_000)

  test('exact counts after a known number of requests, by route template; hits, misses and statements counted', async () => {
    const before = (await scrape(metricsPort)).samples
    const statuses = await requestMany(`${service.url}/api/v1/content/post/hello`, 7)
    expect(statuses).toEqual(Array(7).fill(200))
    await requestMany(`${service.url}/no/such/path`, 3)
    const after = (await scrape(metricsPort)).samples
    const entry = { http_request_method: 'GET', http_route: ENTRY_ROUTE, http_response_status_code: '200' }
    expect(sumOf(after, REQUESTS, entry) - sumOf(before, REQUESTS, entry)).toBe(7)
    const other = { http_request_method: 'GET', http_route: 'other', http_response_status_code: '404' }
    expect(sumOf(after, REQUESTS, other) - sumOf(before, REQUESTS, other)).toBe(3)
    // The first read of the entry was loaded (a miss), the six after it were hits.
    const cache = (samples: Sample[], result: string) => sumOf(samples, 'vitrine_cache_requests_total', { result })
    expect(cache(after, 'hit') - cache(before, 'hit')).toBe(6)
    expect(cache(after, 'miss') - cache(before, 'miss')).toBe(1)
    expect(sumOf(after, 'vitrine_db_statement_duration_seconds_count', { server: 'primary' })).toBeGreaterThan(0)
    expect(sumOf(after, 'vitrine_change_listener_up')).toBe(1)
    expect(sumOf(after, 'vitrine_cache_bytes')).toBeGreaterThan(0)
    expect(sumOf(after, 'process_resident_memory_bytes')).toBeGreaterThan(10_000_000)
    expect(sumOf(after, 'process_cpu_seconds_total')).toBeGreaterThan(0)
    expect(Math.abs(sumOf(after, 'process_start_time_seconds') - Date.now() / 1000)).toBeLessThan(600)
  })

  test('a hit is counted under its route, whichever URL made the output it serves (a trailing slash first, C3)', async () => {
    const before = (await scrape(metricsPort)).samples
    // The slashed URL computes the list's output; the plain URL's hits serve that same output.
    expect(await requestMany(`${service.url}/api/v1/content/page/`, 1)).toEqual([200])
    expect(await requestMany(`${service.url}/api/v1/content/page`, 3)).toEqual([200, 200, 200])
    const after = (await scrape(metricsPort)).samples
    const list = { http_request_method: 'GET', http_route: '/api/v1/content/{type}', http_response_status_code: '200' }
    const other = { http_request_method: 'GET', http_route: 'other' }
    expect([sumOf(after, REQUESTS, list) - sumOf(before, REQUESTS, list), sumOf(after, REQUESTS, other) - sumOf(before, REQUESTS, other)]).toEqual([4, 0])
  })

  test('label values stay bounded: distinct slugs and query strings make no new series, and no label holds a path', async () => {
    const seriesOf = (samples: Sample[]) => samples.filter((sample) => sample.name === REQUESTS).map((sample) => JSON.stringify(sample.labels)).sort()
    await requestMany(`${service.url}/api/v1/content/post/missing-0?x=0`, 1)
    await requestMany(`${service.url}/api/v1/content/post?page=1&x=0`, 1)
    const before = seriesOf((await scrape(metricsPort)).samples)
    for (let index = 1; index <= 20; index++) {
      await requestMany(`${service.url}/api/v1/content/post/missing-${index}?x=${index}`, 1)
      await requestMany(`${service.url}/api/v1/content/post?page=1&x=${index}`, 1)
    }
    const after = (await scrape(metricsPort)).samples
    expect(seriesOf(after)).toEqual(before)
    for (const sample of after) {
      for (const value of Object.values(sample.labels)) expect(value).not.toMatch(/missing|hello|\?|x=/)
    }
  })

  test('the exposition passes promtool check metrics; OpenMetrics when Accept asks for it', async () => {
    const open = await scrape(metricsPort, 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5')
    expect(open.type).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8')
    expect(open.text.endsWith('# EOF\n')).toBe(true)
    expect(open.text).toContain('# TYPE vitrine_cache_requests counter\nvitrine_cache_requests_total{result="hit"}')
    if (!PROMTOOL) return console.log('metrics: promtool check metrics skipped (no promtool)')
    const checked = await promtool(['check', 'metrics'], (await scrape(metricsPort)).text)
    expect(checked).toEqual({ code: 0, output: '' })
  })

  test.skipIf(!PROMETHEUS)('a real Prometheus scrapes the port and answers a query over the request counter', async () => {
    const dir = mkdtempSync(join(scratch, 'prometheus-'))
    const webPort = await freePort()
    writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: vitrine\n    static_configs:\n      - targets: ['127.0.0.1:${metricsPort}']\n`)
    const prometheus = Bun.spawn(
      [PROMETHEUS!, `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${webPort}`],
      { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
    )
    try {
      const expected = sumOf((await scrape(metricsPort)).samples, REQUESTS, { http_route: ENTRY_ROUTE, http_response_status_code: '200' })
      const query = encodeURIComponent(`sum(${REQUESTS}{job="vitrine",http_route="${ENTRY_ROUTE}",http_response_status_code="200"})`)
      let answer: unknown
      await waitFor('Prometheus answers the query with the count the service reports', async () => {
        const response = await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${query}`).catch(() => null)
        if (!response?.ok) return false
        answer = await response.json()
        const result = (answer as { data?: { result?: { value: [number, string] }[] } }).data?.result
        return result?.length === 1 && Number(result[0].value[1]) === expected
      }, 30_000)
      expect(expected).toBe(7)
    } finally {
      prometheus.kill('SIGTERM')
      await prometheus.exited
    }
  }, 60_000)

  test('stops with the service', async () => {
    expect(await service.stop('SIGTERM')).toBe(0)
    expect(await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(() => 'answered', () => 'refused')).toBe('refused')
  })
})

describe('C53: WORKERS=2, one scrape for every worker', () => {
  test('the supervisor serves METRICS_PORT and sums the workers: counts are exact', async () => {
    const metricsPort = await freePort()
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', WORKERS: '2', METRICS_PORT: String(metricsPort) })
    try {
      await waitFor('both workers serve', () => (service.output().match(/Vitrine is serving/g) ?? []).length >= 2, 30_000)
      await waitFor('both change listeners are up', async () => sumOf((await scrape(metricsPort)).samples, 'vitrine_change_listener_up') === 1)
      const before = (await scrape(metricsPort)).samples
      const where = { http_route: ENTRY_ROUTE, http_response_status_code: '200' }
      expect(sumOf(before, REQUESTS, where)).toBe(0)
      // Each on a connection of its own: the kernel spreads them over both workers.
      expect(await requestMany(`${service.url}/api/v1/content/post/hello`, 40)).toEqual(Array(40).fill(200))
      const after = await scrape(metricsPort)
      expect(sumOf(after.samples, REQUESTS, where)).toBe(40)
      const cache = sumOf(after.samples, 'vitrine_cache_requests_total')
      expect(cache).toBe(40)
      // Each worker loaded the entry once, at most: two misses at most, every other request a hit.
      expect(sumOf(after.samples, 'vitrine_cache_requests_total', { result: 'miss' })).toBeLessThanOrEqual(2)
      expect(sumOf(after.samples, 'vitrine_change_listener_up')).toBe(1)
      // Three processes' memory: more than one process has.
      expect(sumOf(after.samples, 'process_resident_memory_bytes')).toBeGreaterThan(sumOf(before, 'process_resident_memory_bytes') / 2)
      if (PROMTOOL) expect(await promtool(['check', 'metrics'], after.text)).toEqual({ code: 0, output: '' })
      // The series are the same a single process would report: merged, not one set per worker.
      const names = after.samples.filter((sample) => sample.name === REQUESTS).map((sample) => JSON.stringify(sample.labels))
      expect(new Set(names).size).toBe(names.length)
    } finally {
      expect(await service.stop('SIGTERM')).toBe(0)
    }
  }, 90_000)
})

describe('C53: the registry and its writer', () => {
  test('counters and histograms are summed across processes, gauges by their merge', () => {
    const make = (requests: number, lag: number, up: number) => {
      const registry = new Registry()
      registry.counter({ name: 'c_total', help: 'c', labelNames: ['result'] }).inc(['hit'], requests)
      registry.gauge({ name: 'lag', help: 'l', merge: 'max' }).set(undefined, lag)
      registry.gauge({ name: 'up', help: 'u', merge: 'min' }).set(undefined, up)
      registry.histogram({ name: 'h', help: 'h', bounds: [1, 2] }).observe(undefined, requests)
      return registry.snapshot()
    }
    const text = writeExposition(mergeSnapshots([make(1, 0.5, 1), make(2, 3, 0)]), 'prometheus')
    expect(text).toContain('c_total{result="hit"} 3\n')
    expect(text).toContain('lag 3\n')
    expect(text).toContain('up 0\n')
    expect(text).toContain('h_bucket{le="1"} 1\nh_bucket{le="2"} 2\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 2\n')
  })

  test('label values are escaped; Accept picks the format', () => {
    const registry = new Registry()
    registry.counter({ name: 'odd_total', help: 'a \\ help\nline', labelNames: ['callback'] }).inc(['a "quoted" \\ name\n'])
    expect(writeExposition(registry.snapshot(), 'prometheus')).toBe('# HELP odd_total a \\\\ help\\nline\n# TYPE odd_total counter\nodd_total{callback="a \\"quoted\\" \\\\ name\\n"} 1\n')
    expect(formatFor(null)).toBe('prometheus')
    expect(formatFor('text/plain')).toBe('prometheus')
    expect(formatFor('application/openmetrics-text; version=1.0.0')).toBe('openmetrics')
    expect(formatFor('application/openmetrics-text;q=0, text/plain')).toBe('prometheus')
  })
})

describe('C53: families recorded in process', () => {
  test('a filter callback is timed under its file and name; statements under their lane and server', async () => {
    resetMetrics()
    recordMetrics(true)
    const filters = new FilterRegistry()
    filters.add(CONTENT_ITEM_HOOK, function tagged(item) { return item }, {}, 'extensions/10-tagged.ts')
    filters.add(CONTENT_ITEM_HOOK, (item) => item, {}, 'extensions/10-tagged.ts')
    const api = testApp(db.url, { METRICS_PORT: '9464' }, filters)
    try {
      expect((await api.get('/api/v1/content/post')).status).toBe(200)
      const samples = parseExposition(writeExposition(registry.snapshot(), 'prometheus'))
      expect(sumOf(samples, 'vitrine_hook_duration_seconds_count', { callback: 'extensions/10-tagged.ts:tagged' })).toBe(1)
      expect(sumOf(samples, 'vitrine_hook_duration_seconds_count', { callback: 'extensions/10-tagged.ts:#2' })).toBe(1)
      expect(sumOf(samples, 'vitrine_db_statement_duration_seconds_count', { statement: 'cheap', server: 'primary' })).toBeGreaterThanOrEqual(1)
      expect(sumOf(samples, REQUESTS, { http_route: '/api/v1/content/{type}', http_response_status_code: '200' })).toBe(1)
    } finally {
      await api.close()
      recordMetrics(false)
    }
  })

  test('a replica is labelled by its index: out of the rotation when it is no standby, its statements under replica-0', async () => {
    resetMetrics()
    recordMetrics(true)
    // The primary named as a replica: reachable, but not in recovery, so never in the rotation.
    const api = await replicatedTestApp(db.url, [db.url])
    try {
      await api.replicas.checkAll()
      const samples = parseExposition(writeExposition(registry.snapshot(), 'prometheus'))
      expect(samples.filter((sample) => sample.name === 'vitrine_replica_in_rotation')).toEqual([{ name: 'vitrine_replica_in_rotation', labels: { replica: '0' }, value: 0 }])
      expect(sumOf(samples, 'vitrine_db_statement_duration_seconds_count', { server: 'replica-0' })).toBeGreaterThanOrEqual(1)
    } finally {
      await api.close()
      recordMetrics(false)
    }
  })
})

describe('C53: the metrics room', () => {
  test('imports none of the rooms that record into it (docs: a room that records imports src/metrics/, never the other way)', () => {
    const dir = join(import.meta.dir, '..', 'src', 'metrics')
    for (const file of readdirSync(dir)) {
      const imports = [...readFileSync(join(dir, file), 'utf8').matchAll(/from '([^']+)'/g)].map(([, from]) => from)
      expect([file, imports.filter((from) => !from.startsWith('./') && from !== 'bun')]).toEqual([file, []])
    }
  })
})

describe('C53: the route template of a request URL', () => {
  test('a template, never the path; static segments win over parameters; anything else is other', () => {
    const routeOf = routeTemplates(['/', '/api/v1', '/api/v1/content/:type', '/api/v1/content/:type/:slug', '/api/v1/content-types', '/api/v1/taxonomies/:taxonomy/terms', '/api/v1/sync/:type', '/media/*'])
    const cases: [string, string][] = [
      ['http://localhost/', '/'],
      ['http://localhost/api/v1', '/api/v1'],
      ['http://localhost/api/v1/content/post?page=2&slug=/x/y', '/api/v1/content/{type}'],
      ['http://localhost/api/v1/content/post/hello', '/api/v1/content/{type}/{slug}'],
      ['http://localhost/api/v1/content-types', '/api/v1/content-types'],
      ['http://localhost/api/v1/taxonomies/tag/terms', '/api/v1/taxonomies/{taxonomy}/terms'],
      ['http://localhost/api/v1/sync/post', '/api/v1/sync/{type}'],
      ['http://localhost/media/2024/a.png', '/media/{path}'],
      ['/api/v1/content/post', '/api/v1/content/{type}'],
      // One trailing slash takes the route without it, as the router does (C3); two do not.
      ['http://localhost/api/v1/', '/api/v1'],
      ['http://localhost/api/v1/content/post/?page=2', '/api/v1/content/{type}'],
      ['http://localhost/api/v1/content/post/hello/', '/api/v1/content/{type}/{slug}'],
      ['http://localhost/api/v1/content/post//', 'other'],
      ['http://localhost/api/v1/content//x', 'other'],
      ['http://localhost/api/v1/taxonomies/tag/terms/more', 'other'],
      ['http://localhost/wp-login.php', 'other'],
      ['http://localhost', 'other'],
    ]
    expect(cases.map(([url]) => [url, routeOf(url)])).toEqual(cases)
  })
})

describe('C53: the Grafana dashboard', () => {
  test.skipIf(!PROMTOOL)('every PromQL expression of deploy/grafana/vitrine.json passes promtool check rules', async () => {
    const dashboard = JSON.parse(readFileSync(join(import.meta.dir, '..', 'deploy', 'grafana', 'vitrine.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[] }
    const expressions = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr)
    expect(expressions.length).toBeGreaterThan(15)
    // Grafana's own variable is not PromQL: stand in a window for it, as Grafana does.
    const rules = expressions.map((expr, index) => `      - record: vitrine:dashboard_${index}\n        expr: ${JSON.stringify(expr.replaceAll('$__rate_interval', '1m'))}\n`)
    const file = join(scratch, 'dashboard-rules.yml')
    writeFileSync(file, `groups:\n  - name: vitrine-dashboard\n    rules:\n${rules.join('')}`)
    const checked = await promtool(['check', 'rules', file])
    expect(checked.output).toContain(`SUCCESS: ${expressions.length} rules found`)
    expect(checked.code).toBe(0)
    // Every family the dashboard reads is one the service exposes.
    const families = new Set(['http_server_request_duration_seconds', 'vitrine_cache_requests_total', 'vitrine_cache_bytes', 'vitrine_cache_evictions_total', 'vitrine_db_statement_duration_seconds', 'vitrine_heavy_lane_waiting', 'vitrine_heavy_lane_refused_total', 'vitrine_change_listener_up', 'vitrine_event_subscribers', 'vitrine_hook_duration_seconds', 'vitrine_purge_requests_total', 'vitrine_purge_pending_keys', 'vitrine_rate_limited_total', 'vitrine_replica_lag_seconds', 'vitrine_replica_in_rotation', 'vitrine_kept_drift', 'vitrine_webhook_deliveries_total', 'vitrine_webhook_pending_messages', 'vitrine_webhook_oldest_pending_seconds', 'process_resident_memory_bytes', 'process_cpu_seconds_total'])
    for (const expr of expressions) {
      const names = [...expr.matchAll(/\b(?:http|vitrine|process)_\w+/g)].map(([name]) => name).filter((name) => !LABELS.has(name))
      for (const name of names) expect([name, families.has(name.replace(/_(bucket|count|sum)$/, ''))]).toEqual([name, true])
    }
  })
})
