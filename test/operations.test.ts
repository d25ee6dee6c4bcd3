import { afterAll, describe, expect, test } from 'bun:test'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedDatabase } from '../src/db/embedded'
import { migrate } from '../src/db/migrate'
import { connectDatabase, withDeadline } from '../src/db/connect'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addEntry } from './support/fixtures'
import { startService } from './support/service'

const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' } } })
const opened: TestApp[] = []
const open = (...args: Parameters<typeof testApp>) => {
  const api = testApp(...args)
  opened.push(api)
  return api
}
afterAll(async () => {
  for (const api of opened) await api.close()
  await db.sql.end()
})

/** The request log line is written after the response is handed over: let that happen first. */
async function logLines(api: TestApp) {
  await Bun.sleep(10)
  return api.logs.map((line) => JSON.parse(line))
}

describe('health probes', () => {
  test('/healthz answers while the process runs, even with the database down', async () => {
    const down = open('postgres://postgres@127.0.0.1:1/none')
    const response = await down.get('/healthz')
    expect([response.status, response.body]).toEqual([200, { status: 'ok' }])
  })

  test('/readyz is 200 when the database answers and is migrated, 503 JSON otherwise', async () => {
    expect((await open(db.url).get('/readyz')).body).toEqual({ status: 'ready' })
    const empty = await createTestDatabase({ migrated: false })
    const unmigrated = await open(empty.url).get('/readyz')
    expect([unmigrated.status, unmigrated.body]).toEqual([503, { error: 'The database schema is not migrated: run `bun run migrate`.' }])
    expect(unmigrated.headers.get('retry-after')).toBeTruthy()
    await empty.sql.end()
    const unreachable = await open('postgres://postgres@127.0.0.1:1/none').get('/readyz')
    expect([unreachable.status, unreachable.body]).toEqual([503, { error: 'The database is not reachable.' }])
  })

  test('probes are not logged at info level, only at debug', async () => {
    const info = open(db.url, { LOG_LEVEL: 'info' })
    await info.get('/healthz')
    await info.get('/readyz')
    expect(await logLines(info)).toEqual([])
    const debug = open(db.url, { LOG_LEVEL: 'debug' })
    await debug.get('/healthz')
    expect(await logLines(debug)).toEqual([expect.objectContaining({ level: 'debug', path: '/healthz' })])
  })
})

describe('deadlines', () => {
  test('withDeadline rejects with DATABASE_TIMEOUT and withdraws the abandoned work', async () => {
    let cancelled = 0
    const never = new Promise<never>(() => {})
    const started = performance.now()
    await expect(withDeadline(never, 30, () => cancelled++)).rejects.toMatchObject({ code: 'DATABASE_TIMEOUT' })
    await Bun.sleep(60)
    expect(cancelled).toBe(1)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(await withDeadline(Promise.resolve('fast'), 30, () => cancelled++)).toBe('fast')
    await Bun.sleep(40)
    expect(cancelled).toBe(1)
  })
})

describe('documentation assets', () => {
  test('an unknown file under /docs/assets is a JSON 404 (C4)', async () => {
    const response = await open(db.url).get('/docs/assets/secret.js')
    expect([response.status, response.body, response.headers.get('content-type')]).toEqual([404, { error: 'Not found.' }, 'application/json; charset=utf-8'])
    expect((await open(db.url).get('/docs/assets/swagger-ui.css')).headers.get('content-type')).toBe('text/css; charset=utf-8')
  })
})

describe('logs', () => {
  test('one JSON line per request: time, level, request id, method, path, query, status, duration; never headers', async () => {
    const api = open(db.url, { LOG_LEVEL: 'info' })
    await api.get('/api/v1/content/post?lang=fr&per_page=5', { headers: { 'x-request-id': 'req-1', authorization: 'Bearer secret-token', cookie: 'session=secret' } })
    await api.get('/api/v1/content/post?page=0')
    const [ok, bad] = await logLines(api)
    expect(ok).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), level: 'info', msg: 'request', requestId: 'req-1', method: 'GET', path: '/api/v1/content/post', query: 'lang=fr&per_page=5', status: 200, ms: expect.any(Number) })
    expect(bad).toMatchObject({ status: 400, query: 'page=0' })
    expect(api.logs.join('\n')).not.toContain('secret')
  })

  test('LOG_LEVEL silent writes nothing, errors included', async () => {
    const api = open('postgres://postgres@127.0.0.1:1/none', { LOG_LEVEL: 'silent' })
    expect((await api.get('/api/v1/content/post')).status).toBe(503)
    expect(await logLines(api)).toEqual([])
  })
})

describe('graceful shutdown', () => {
  test('a slow request in flight when SIGTERM arrives still gets its full 200; new connections are refused; exit 0', async () => {
    const extensions = await mkdtemp(join(tmpdir(), 'vitrine-slow-'))
    await chmod(extensions, 0o755)
    await Bun.write(join(extensions, 'slow.ts'), [
      `import { t } from '${join(import.meta.dir, '..', 'src', 'hooks', 'extension')}'`,
      "export default ({ addFilter }) => addFilter('service/api/content-item', async (data) => { await Bun.sleep(1500); return { ...data, slow: true } }, { schema: { add: { slow: t.Boolean() } } })\n",
    ].join('\n'))
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', EXTENSIONS_DIR: extensions, HOOK_TIMEOUT_MS: '5000' })
    const inFlight = fetch(`${service.url}/api/v1/content/post/hello`)
    await Bun.sleep(300)
    const signalled = performance.now()
    service.process.kill('SIGTERM')
    await Bun.sleep(100)
    await expect(fetch(`${service.url}/healthz`)).rejects.toThrow()
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ data: { slug: 'hello', slow: true } })
    expect(await service.process.exited).toBe(0)
    console.log(`graceful shutdown: exit ${Math.round(performance.now() - signalled)} ms after SIGTERM, with a 1.5 s request in flight`)
    expect(service.output()).toContain('"msg":"stopped"')
    await rm(extensions, { recursive: true, force: true })
  }, 30_000)
})

describe('database outages (C22), with a PostgreSQL of the test’s own', () => {
  test('while it is down: a bounded 503 with Retry-After; when it is back: 200 without a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'vitrine-outage-'))
    await chmod(dataDir, 0o755)
    let cluster = await startEmbeddedDatabase({ dataDir, preferredPort: 0 })
    const port = Number(new URL(cluster.url).port)
    try {
      const setup = connectDatabase(cluster.url, { max: 1 })
      await migrate(setup)
      await addEntry(setup, { translations: { en: { slug: 'hello' } } })
      await setup.end()
      const api = open(cluster.url, { DATABASE_TIMEOUT_MS: '2000' })
      expect((await api.get('/api/v1/content/post')).status).toBe(200)

      await cluster.stop()
      const downAt = performance.now()
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello', '/readyz']) {
        const started = performance.now()
        const response = await api.get(path)
        expect([path, response.status]).toEqual([path, 503])
        expect(response.headers.get('retry-after')).toMatch(/^\d+$/)
        expect(performance.now() - started).toBeLessThan(2500)
      }
      expect((await api.get('/api/v1/content/post')).body).toEqual({ error: 'Service unavailable.' })
      expect((await api.get('/healthz')).status).toBe(200)

      cluster = await startEmbeddedDatabase({ dataDir, preferredPort: port })
      expect(Number(new URL(cluster.url).port)).toBe(port)
      let status = 0
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = (await api.get('/api/v1/content/post')).status
        if (status !== 200) await Bun.sleep(100)
      }
      expect(status).toBe(200)
      console.log(`database outage: 503 for ${Math.round(performance.now() - downAt)} ms (stop to first 200, restart included)`)
    } finally {
      await cluster.stop()
      await rm(dataDir, { recursive: true, force: true })
    }
  }, 60_000)

  test('a database that hangs (SIGSTOP) gets a 503 within DATABASE_TIMEOUT_MS, and 200 again once it resumes', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'vitrine-frozen-'))
    await chmod(dataDir, 0o755)
    const cluster = await startEmbeddedDatabase({ dataDir, preferredPort: 0 })
    const postmaster = Number((await Bun.file(join(dataDir, 'postgres', 'postmaster.pid')).text()).split('\n')[0])
    const signalCluster = (signal: string) => Bun.spawnSync(['sh', '-c', `kill -${signal} ${postmaster} $(pgrep -P ${postmaster})`])
    try {
      const setup = connectDatabase(cluster.url, { max: 1 })
      await migrate(setup)
      await setup.end()
      const api = open(cluster.url, { DATABASE_TIMEOUT_MS: '1000' })
      expect((await api.get('/api/v1/content/post')).status).toBe(200)
      signalCluster('STOP')
      const started = performance.now()
      const frozen = await api.get('/api/v1/content/post')
      const waited = performance.now() - started
      expect(frozen.status).toBe(503)
      expect(waited).toBeGreaterThan(900)
      expect(waited).toBeLessThan(2000)
      signalCluster('CONT')
      let status = 0
      for (let i = 0; i < 50 && status !== 200; i++) {
        status = (await api.get('/api/v1/content/post')).status
        if (status !== 200) await Bun.sleep(100)
      }
      expect(status).toBe(200)
    } finally {
      signalCluster('CONT')
      await cluster.stop()
      await rm(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
