import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isPortFree, startEmbeddedDatabase } from '../src/db/embedded'
import { migrate } from '../src/db/migrate'
import { connectDatabase, withDeadline } from '../src/db/connect'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addEntry } from './support/fixtures'
import { startService } from './support/service'
import { waitFor } from './support/wait'

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
/**
 * What a test started outside the app (a cluster, a frozen process): undone after
 * each test, also when it fails or times out, when its own `finally` never runs.
 */
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!()
}, { timeout: 60_000 })

/** The log lines written, once the request line of `url` has been logged (it comes after the response). */
async function logLines(api: TestApp, url: string) {
  await api.loggedRequest(url)
  return api.logs.map((line) => JSON.parse(line))
}

/** Whether a new TCP connection to the service's port is refused: its listener is closed. */
async function refusesConnections(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  try {
    const socket = await Bun.connect({ hostname, port: Number(port), socket: { data() {} } })
    socket.end()
    return false
  } catch (error) {
    if ((error as { code?: string }).code === 'ECONNREFUSED') return true
    throw error
  }
}

/**
 * A port below Linux's range of ephemeral ports (32768 and up), free now. The outage test starts its
 * PostgreSQL again on the same port: a port of that range, once free, can become the local port of
 * any outgoing connection of the machine meanwhile (with two shards of tests, once it did), and
 * PostgreSQL then could not listen on it.
 */
async function portForARestart(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (await isPortFree(port)) return port
  }
  throw new Error('No free port between 20000 and 32000.')
}

/** A PostgreSQL of the test's own, migrated, with one entry; stopped and deleted after the test. */
async function ownDatabase(prefix: string) {
  const dataDir = await mkdtemp(join(tmpdir(), prefix))
  await chmod(dataDir, 0o755)
  const cluster = { current: await startEmbeddedDatabase({ dataDir, preferredPort: await portForARestart() }) }
  cleanups.push(async () => {
    await cluster.current.stop()
    await rm(dataDir, { recursive: true, force: true })
  })
  const setup = connectDatabase(cluster.current.url, { max: 1 })
  await migrate(setup)
  await addEntry(setup, { translations: { en: { slug: 'hello' } } })
  await setup.end()
  return { dataDir, cluster }
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
    expect(unmigrated.headers.get('retry-after')).toBe('30')
    await empty.sql.end()
    const unreachable = await open('postgres://postgres@127.0.0.1:1/none').get('/readyz')
    expect([unreachable.status, unreachable.body]).toEqual([503, { error: 'The database is not reachable.' }])
    expect(unreachable.headers.get('retry-after')).toBe('2')
  })

  test('/readyz logs the readiness once each time it changes: "not migrated" is no error', async () => {
    const empty = await createTestDatabase({ migrated: false })
    const api = open(empty.url, { LOG_LEVEL: 'info' })
    const lines = () => api.logs.map((line) => JSON.parse(line)).map(({ level, msg }) => `${level}: ${msg}`)
    for (let probe = 0; probe < 3; probe++) expect((await api.get('/readyz')).status).toBe(503)
    expect(lines()).toEqual(['warn: not ready: the database schema is not migrated: run `bun run migrate`'])
    await migrate(empty.sql)
    for (let probe = 0; probe < 3; probe++) expect((await api.get('/readyz')).status).toBe(200)
    expect(lines()).toEqual([
      'warn: not ready: the database schema is not migrated: run `bun run migrate`',
      'info: ready: the database answers and its schema is migrated',
    ])
    // The probes' own request lines are at debug level: LOG_LEVEL=info drops them.
    await api.loggedRequest('/readyz')
    expect(api.logs).toHaveLength(2)
    await empty.sql.end()
  })

  test('probes are not logged at info level, only at debug', async () => {
    const info = open(db.url, { LOG_LEVEL: 'info' })
    await info.get('/healthz')
    await info.get('/readyz')
    await info.loggedRequest('/healthz')
    // Only the readiness, logged once as it became known (see the next test).
    expect(await logLines(info, '/readyz')).toEqual([expect.objectContaining({ level: 'info', msg: 'ready: the database answers and its schema is migrated' })])
    const debug = open(db.url, { LOG_LEVEL: 'debug' })
    await debug.get('/healthz')
    expect(await logLines(debug, '/healthz')).toEqual([expect.objectContaining({ level: 'debug', path: '/healthz' })])
  })
})

describe('deadlines', () => {
  test('withDeadline rejects with DATABASE_TIMEOUT and withdraws the abandoned work', async () => {
    let cancelled = 0
    const never = new Promise<never>(() => {})
    const started = performance.now()
    await expect(withDeadline(never, 30, () => cancelled++)).rejects.toMatchObject({ code: 'DATABASE_TIMEOUT' })
    expect(performance.now() - started).toBeGreaterThanOrEqual(29)
    // The withdrawal is queued before the rejection is seen.
    expect(cancelled).toBe(1)
    expect(await withDeadline(Promise.resolve('fast'), 30, () => cancelled++)).toBe('fast')
    // Timers fire in the order they fall due: once a later one has fired, the deadline's would have.
    await new Promise((resolve) => setTimeout(resolve, 31))
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
    await api.get('/', { redirect: 'manual' })
    await api.loggedRequest('/api/v1/content/post?lang=fr&per_page=5')
    const [ok, bad, redirect] = await logLines(api, '/')
    expect(ok).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), level: 'info', msg: 'request', requestId: 'req-1', method: 'GET', path: '/api/v1/content/post', query: 'lang=fr&per_page=5', status: 200, ms: expect.any(Number) })
    expect(bad).toMatchObject({ status: 400, query: 'page=0' })
    // The status sent: a handler's own Response (the redirect to /docs) included.
    expect(redirect).toMatchObject({ status: 302, path: '/' })
    expect(api.logs.join('\n')).not.toContain('secret')
  })

  test('LOG_LEVEL silent writes nothing, errors included', async () => {
    const api = open('postgres://postgres@127.0.0.1:1/none', { LOG_LEVEL: 'silent' })
    expect((await api.get('/api/v1/content/post')).status).toBe(503)
    expect(await logLines(api, '/api/v1/content/post')).toEqual([])
  })
})

describe('graceful shutdown', () => {
  test('a request in flight when SIGTERM arrives still gets its full 200; new connections are refused; exit 0', async () => {
    const extensions = await mkdtemp(join(tmpdir(), 'vitrine-slow-'))
    await chmod(extensions, 0o755)
    cleanups.push(() => rm(extensions, { recursive: true, force: true }))
    // The callback says when it starts, then holds its request until the test creates `release`.
    // Its folder lies outside the repository: `#vitrine/extension` resolves there too.
    const release = join(extensions, 'release')
    await Bun.write(
      join(extensions, 'slow.ts'),
      `import { defineExtension, t } from '#vitrine/extension'
      export default defineExtension(({ addFilter }) => addFilter('service/api/content-item', async (data) => {
        console.log('slow callback: started')
        while (!(await Bun.file(${JSON.stringify(release)}).exists())) await Bun.sleep(10)
        return { ...data, slow: true }
      }, { schema: { add: { slow: t.Boolean() } } }))\n`,
    )
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', EXTENSIONS_DIR: extensions, HOOK_TIMEOUT_MS: '30000' })
    cleanups.push(async () => {
      if (service.process.exitCode === null) service.process.kill('SIGKILL')
    })
    const inFlight = fetch(`${service.url}/api/v1/content/post/hello`)
    await service.waitForOutput(/slow callback: started/)
    service.process.kill('SIGTERM')
    await service.waitForOutput(/shutting down: finishing requests in flight/)
    await waitFor('the service refuses new connections', () => refusesConnections(service.url))
    await Bun.write(release, '')
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ data: { slug: 'hello', slow: true } })
    expect(await service.process.exited).toBe(0)
    expect(service.output()).toContain('"msg":"stopped"')
  }, 30_000)
})

describe('graceful shutdown with event streams open (C49)', () => {
  test('SIGTERM ends every event stream at once: the process exits long before SHUTDOWN_GRACE_MS', async () => {
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', SHUTDOWN_GRACE_MS: '60000' })
    cleanups.push(async () => {
      if (service.process.exitCode === null) service.process.kill('SIGKILL')
    })
    const response = await fetch(`${service.url}/api/v1/events`)
    const reader = response.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^id: \d+\.\d+/)
    const started = performance.now()
    service.process.kill('SIGTERM')
    // The stream ends (no error: the server closes it), then the process exits.
    for (;;) if ((await reader.read()).done) break
    expect(await service.process.exited).toBe(0)
    // Waiting for the stream would have taken the whole grace period (60 s).
    expect(performance.now() - started).toBeLessThan(20_000)
  }, 40_000)
})

describe('database outages (C22), with a PostgreSQL of the test’s own', () => {
  test('while it is down: a bounded 503 with Retry-After; when it is back: 200 without a restart', async () => {
    const { dataDir, cluster } = await ownDatabase('vitrine-outage-')
    const port = Number(new URL(cluster.current.url).port)
    const api = open(cluster.current.url, { DATABASE_TIMEOUT_MS: '2000' })
    expect((await api.get('/api/v1/content/post')).status).toBe(200)

    await cluster.current.stop()
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello', '/readyz']) {
      const started = performance.now()
      const response = await api.get(path)
      expect([path, response.status]).toEqual([path, 503])
      expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
      // Bounded: the deadline, with room for a loaded machine; a hang would take the test's whole time.
      expect(performance.now() - started).toBeLessThan(2000 + 5000)
    }
    expect((await api.get('/api/v1/content/post')).body).toEqual({ error: 'Service unavailable.' })

    cluster.current = await startEmbeddedDatabase({ dataDir, preferredPort: port })
    expect(Number(new URL(cluster.current.url).port)).toBe(port)
    await waitFor('a content request is served again', async () => (await api.get('/api/v1/content/post')).status === 200)
    expect((await api.get('/api/v1/content/post/hello')).body.data.slug).toBe('hello')
  }, 60_000)

  test('a database that hangs (SIGSTOP) gets a 503 at DATABASE_TIMEOUT_MS, and 200 again once it resumes', async () => {
    const { dataDir, cluster } = await ownDatabase('vitrine-frozen-')
    const postmaster = Number((await Bun.file(join(dataDir, 'postgres', 'postmaster.pid')).text()).split('\n')[0])
    const signalCluster = (signal: string) => Bun.spawnSync(['sh', '-c', `kill -${signal} ${postmaster} $(pgrep -P ${postmaster})`])
    const api = open(cluster.current.url, { DATABASE_TIMEOUT_MS: '1000' })
    expect((await api.get('/api/v1/content/post')).status).toBe(200)
    signalCluster('STOP')
    // Runs before the cluster is stopped (cleanups run last in, first out), even if this test times out.
    cleanups.push(async () => signalCluster('CONT'))
    const started = performance.now()
    const frozen = await api.get('/api/v1/content/post')
    const waited = performance.now() - started
    expect(frozen.status).toBe(503)
    // The deadline answered, not a faster failure: its code is logged, and it took the whole deadline.
    const logged = api.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'database unavailable')
    expect(logged.at(-1)).toMatchObject({ reason: 'timeout', code: 'DATABASE_TIMEOUT' })
    expect(waited).toBeGreaterThanOrEqual(1000)
    expect(waited).toBeLessThan(1000 + 5000)
    signalCluster('CONT')
    await waitFor('a content request is served again', async () => (await api.get('/api/v1/content/post')).status === 200)
  }, 60_000)
})
