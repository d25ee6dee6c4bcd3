import { afterAll, describe, expect, test } from 'bun:test'
import { once } from 'node:events'
import { Socket } from 'node:net'
import postgres from 'postgres'
import { createTestDatabase } from './support/database'
import { startFaultProxy } from './support/fault-proxy'

/**
 * One regression test per defect of postgres.js 3.4.9 that we patch
 * (patches/postgres@3.4.9.patch, docs/operations.md, "The database driver"). Each drives the
 * real driver against a real PostgreSQL; each fails without the patch.
 */
const db = await createTestDatabase()
const pools: postgres.Sql[] = []
const pool = (url: string, options: postgres.Options<{}> = {}) => {
  const sql = postgres(url, { max: 1, onnotice: () => {}, fetch_types: false, ...options })
  pools.push(sql)
  return sql
}
afterAll(async () => {
  for (const sql of pools) await sql.end({ timeout: 1 })
  await db.sql.end()
})

/** Settles `work`, or fails the test after `ms`: a hang is the defect, the guard only ends the wait. */
function settleWithin<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const guard = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)))
  return Promise.race([work, guard]).finally(() => clearTimeout(timer))
}

/** The rows of a result, as a plain array. */
const rows = async (result: Promise<readonly object[]>) => [...(await result)]

/** The code of the error `work` rejects with; fails when it resolves. */
async function codeOf(work: Promise<unknown>): Promise<unknown> {
  try {
    await work
  } catch (error) {
    return (error as { code?: unknown }).code ?? String(error)
  }
  throw new Error('expected the statement to fail')
}

describe('postgres.js 3.4.9 defects we patch', () => {
  test('a connection that closes while a write is buffered sends the next startup message (porsager/postgres#1186)', async () => {
    // The socket factory only gives the test the moment to close it: the driver, the socket and the server are real.
    let socket: Socket | undefined
    const connected = async () => {
      socket = new Socket()
      socket.connect(Number(new URL(db.url).port), '127.0.0.1')
      await once(socket, 'connect')
      return socket
    }
    const sql = pool(db.url, { connect_timeout: 5, socket: connected } as postgres.Options<{}>)
    expect(await rows(sql`select 1 as one`)).toEqual([{ one: 1 }])
    // The connection dies while the pool still counts it open: the next statement is buffered for it.
    socket!.destroy()
    const lost = sql`select 2 as two`.execute()
    // Unpatched, the close clears the buffered write's timer without forgetting it: the
    // reconnect's startup message is never sent, and the next statement fails with CONNECT_TIMEOUT.
    expect(await codeOf(lost)).toBe('CONNECTION_CLOSED')
    expect(await rows(sql`select 3 as three`)).toEqual([{ three: 3 }])
  })

  test('after the server ends a connection mid-statement, the next statement on the new connection gets its own answer (porsager/postgres#1195)', async () => {
    const sql = pool(db.url, { connection: { application_name: 'vitrine_patch_terminate' } })
    const running = sql`select pg_sleep(30)`.execute()
    await db.sql`
      select pg_terminate_backend(pid)
      from pg_stat_activity
      where application_name = 'vitrine_patch_terminate' and state = 'active' and query like '%pg_sleep%'
    `.then(async function retryUntilRunning(rows): Promise<unknown> {
      if (rows.length) return rows
      await Bun.sleep(20)
      return db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine_patch_terminate' and state = 'active' and query like '%pg_sleep%'`.then(retryUntilRunning)
    })
    expect(['CONNECTION_CLOSED', '57P01']).toContain(String(await codeOf(running)))
    // Unpatched, the 57P01 of the dead connection stays behind and fails this statement too.
    expect(await rows(sql`select 'fresh' as answer`)).toEqual([{ answer: 'fresh' }])
  })

  test('a connection that reports an error before it closes fails every statement still on it (porsager/postgres#1195)', async () => {
    // Statements handed to a connection between its socket's error and its close were kept:
    // they hung, or failed with the error of the next connection attempt, or, once it
    // reconnected, took the answers of later statements.
    const proxy = await startFaultProxy('127.0.0.1', Number(new URL(db.url).port))
    try {
      const sql = pool(proxy.url(db.url), { max: 2 })
      const failures = new Map<string, number>()
      let wrong = 0
      for (let round = 0; round < 5; round++) {
        let stop = false
        const worker = async (n: number) => {
          for (let i = 0; !stop; i++) {
            const asked = n * 1_000_000 + round * 10_000 + i
            const statement = sql`select ${asked}::int as asked, pg_sleep(0.002)`
            try {
              const [row] = await settleWithin(statement.execute(), 10_000, 'a statement')
              if (row.asked !== asked) wrong++
            } catch (error) {
              const sent = (statement as unknown as { state: unknown }).state != null
              const key = `${(error as { code?: string }).code} ${sent ? 'after it was sent' : 'before it was sent'}`
              failures.set(key, (failures.get(key) ?? 0) + 1)
              await Bun.sleep(2)
            }
          }
        }
        const workers = [1, 2, 3, 4, 5, 6].map(worker)
        await Bun.sleep(100)
        await proxy.setMode('refuse')
        proxy.resetAll()
        await Bun.sleep(100)
        await proxy.setMode('forward')
        await Bun.sleep(100)
        stop = true
        await Promise.all(workers)
      }
      expect(wrong).toBe(0)
      // A statement already sent fails with its own connection's end, never with a later connection attempt's refusal.
      expect([...failures.keys()].filter((key) => key.endsWith('after it was sent') && !key.startsWith('ECONNRESET') && !key.startsWith('CONNECTION_CLOSED'))).toEqual([])
    } finally {
      await proxy.close()
    }
  })

  test('a server that closes the connection during startup fails the statement instead of reconnecting forever (porsager/postgres#1193)', async () => {
    const proxy = await startFaultProxy('127.0.0.1', Number(new URL(db.url).port))
    try {
      await proxy.setMode('close-at-startup')
      const sql = pool(proxy.url(db.url), { connect_timeout: 30 })
      expect(await codeOf(settleWithin(sql`select 1`.execute(), 10_000, 'the statement'))).toBe('CONNECTION_CLOSED')
      await proxy.setMode('forward')
      expect(await rows(sql`select 1 as one`)).toEqual([{ one: 1 }])
    } finally {
      await proxy.close()
    }
  })

  test('a statement withdrawn while its connection is being set up does not leave that connection idle outside the pool', async () => {
    const proxy = await startFaultProxy('127.0.0.1', Number(new URL(db.url).port))
    try {
      // Each round trip of the startup takes 100 ms: the statement's deadline passes before it is done.
      await proxy.setMode('slow', { delayMs: 100 })
      const sql = pool(proxy.url(db.url), { connect_timeout: 30 })
      const withdrawn = sql`select 'withdrawn' as answer`.execute()
      withdrawn.catch(() => {})
      await Bun.sleep(50)
      withdrawn.cancel()
      await expect(withdrawn).rejects.toMatchObject({ code: '57014' })
      // Unpatched, the connection finishes its startup and is never handed back: this waits forever.
      expect(await settleWithin(rows(sql`select 'next' as answer`), 10_000, 'the next statement')).toEqual([{ answer: 'next' }])
    } finally {
      await proxy.close()
    }
  })

  test('cancelling a statement pipelined behind another never hands its answer to the next one', async () => {
    const sql = pool(db.url)
    await sql`select 1`
    const first = sql`select pg_sleep(0.3), 'first' as answer`.execute()
    const second = sql`select 'second' as answer`.execute()
    const third = sql`select 'third' as answer`.execute()
    // All three are written to the one connection; the second is withdrawn while the first runs.
    await Bun.sleep(50)
    second.cancel()
    second.catch(() => {})
    expect((await first)[0].answer).toBe('first')
    // Unpatched, the driver skips the cancelled statement's answer: the third resolves with 'second'.
    expect(await rows(third)).toEqual([{ answer: 'third' }])
    expect(await rows(sql`select 'fourth' as answer`)).toEqual([{ answer: 'fourth' }])
  })
})
