import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import type { Sql } from '../src/db/connect'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addEntry } from './support/fixtures'
import { waitFor } from './support/wait'

/**
 * C22 against real faults of a real PostgreSQL: the app's statement is made to
 * wait on a lock that the test holds, then the database cancels it, ends its
 * backend, or lets the service's deadline pass.
 */
const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!()
})
afterAll(() => db.sql.end())

function open(...args: Parameters<typeof testApp>): TestApp {
  const api = testApp(...args)
  cleanups.push(() => api.close())
  return api
}

/** Takes an exclusive lock on `entries` in a transaction of the test's own, until `release()`. */
async function lockEntries(sql: Sql): Promise<{ release: () => Promise<void> }> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => (locked = resolve))
  const transaction = sql.begin(async (tx) => {
    await tx`lock table entries in access exclusive mode`
    locked()
    await released
  })
  await Promise.race([isLocked, transaction])
  const lock = { release: () => (release(), transaction.then(() => {})) }
  cleanups.push(lock.release)
  return lock
}

/** The backends of the test database that wait on a lock: the app's blocked statements. */
async function lockWaiters(): Promise<number[]> {
  const rows = await db.sql<{ pid: number }[]>`
    select pid
    from pg_stat_activity
    where datname = ${db.name}
      and wait_event_type = 'Lock'
  `
  return rows.map((row) => row.pid)
}

/** Waits until one statement other than those of `done` is blocked on the lock, and returns its backend. */
async function nextLockWaiter(what: string, done: number[] = []): Promise<number> {
  let pid: number | undefined
  await waitFor(what, async () => (pid = (await lockWaiters()).find((waiter) => !done.includes(waiter))) !== undefined)
  return pid!
}

/** The log lines of the 503s: why the database could not answer, and the driver's or server's code. */
function unavailableLogged(api: TestApp) {
  return api.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'database unavailable')
}

describe('C22: database faults answer 503 with Retry-After, and the service serves again', () => {
  test('the service pool sets the server-side statement_timeout to DATABASE_TIMEOUT_MS', async () => {
    const api = open(db.url, { DATABASE_TIMEOUT_MS: '4321' })
    const [{ statement_timeout }] = await api.sql`show statement_timeout`
    expect(statement_timeout).toBe('4321ms')
  })

  test('a statement cancelled by statement_timeout (57014) is a 503, not a 500', async () => {
    // The server's statement_timeout (the pool's 1 s) fires long before the app's own deadline.
    const api = open(db.url, { DATABASE_TIMEOUT_MS: '30000' }, undefined, undefined, { poolTimeoutMs: 1000 })
    const lock = await lockEntries(db.sql)
    const response = await api.get('/api/v1/content/post')
    expect([response.status, response.body]).toEqual([503, { error: 'Service unavailable.' }])
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
    expect(unavailableLogged(api)).toEqual([expect.objectContaining({ reason: 'timeout', code: '57014' })])
    await lock.release()
    // Served again (a loaded server may need more than one 1 s try).
    await waitFor('a content request is served again', async () => (await api.get('/api/v1/content/post')).status === 200)
  })

  test('a statement cancelled by an administrator (pg_cancel_backend, 57014) is a 503', async () => {
    const api = open(db.url)
    const lock = await lockEntries(db.sql)
    const response = api.get('/api/v1/content/post/hello')
    await db.sql`select pg_cancel_backend(${await nextLockWaiter('the statement waits on the lock')})`
    const cancelled = await response
    expect([cancelled.status, cancelled.body]).toEqual([503, { error: 'Service unavailable.' }])
    expect(unavailableLogged(api)).toEqual([expect.objectContaining({ code: '57014' })])
    await lock.release()
    expect((await api.get('/api/v1/content/post/hello')).status).toBe(200)
  })

  test('a backend ended by an administrator (pg_terminate_backend, 57P01): retried once on another connection, then 503', async () => {
    const api = open(db.url)
    const lock = await lockEntries(db.sql)
    // Ended once: the read is run again on a new connection, and answers when the lock goes.
    const once = api.get('/api/v1/content/post')
    const first = await nextLockWaiter('the statement waits on the lock')
    await db.sql`select pg_terminate_backend(${first})`
    await nextLockWaiter('the retried statement waits on the lock', [first])
    await lock.release()
    expect((await once).status).toBe(200)
    // Ended twice: 503 with Retry-After, and the pool still serves.
    const relock = await lockEntries(db.sql)
    const twice = api.get('/api/v1/content/post')
    const ended: number[] = []
    ended.push(await nextLockWaiter('the statement waits on the lock'))
    await db.sql`select pg_terminate_backend(${ended[0]})`
    ended.push(await nextLockWaiter('the retried statement waits on the lock', ended))
    await db.sql`select pg_terminate_backend(${ended[1]})`
    const response = await twice
    expect([response.status, response.body]).toEqual([503, { error: 'Service unavailable.' }])
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
    // The server says 57P01 before it closes; when it closes with input unread, the kernel's reset comes first.
    expect(unavailableLogged(api)).toEqual([expect.objectContaining({ reason: 'lost', code: expect.stringMatching(/^(57P01|ECONNRESET)$/) })])
    await relock.release()
    const next = await api.get('/api/v1/content/post')
    expect([next.status, next.body.meta.total]).toEqual([200, 1])
  })

  test('a statement given up at the deadline is cancelled on the server, not left waiting', async () => {
    // The server's statement_timeout (see the first test) set far beyond the test: only the service's cancel can stop it.
    const api = open(db.url, { DATABASE_TIMEOUT_MS: '500' }, undefined, undefined, { poolTimeoutMs: 600_000 })
    const lock = await lockEntries(db.sql)
    const response = await api.get('/api/v1/content/post')
    expect(response.status).toBe(503)
    expect(unavailableLogged(api)).toEqual([expect.objectContaining({ reason: 'timeout', code: 'DATABASE_TIMEOUT' })])
    // The lock is still held: the statement stops waiting only if it was cancelled.
    await waitFor('the abandoned statement no longer waits on the lock', async () => (await lockWaiters()).length === 0, 5000)
    await lock.release()
    // Served again (a loaded machine may need more than one 500 ms try).
    await waitFor('a content request is served again', async () => (await api.get('/api/v1/content/post')).status === 200)
  })
})
