import type { Sql } from '../../src/db/connect'
import { waitFor } from './wait'

/**
 * The database's clock, which decides what is live (C1), for tests of
 * go-lives: a time ahead of it, waiting for it, and whether it is still
 * before a time.
 */

/**
 * The database's clock, `ms` from now: a go-live taken from it, not from this process's clock.
 * @example const goLive = await databaseTime(db.sql, 2000)
 */
export async function databaseTime(sql: Sql, ms: number): Promise<Date> {
  const [{ at }] = await sql<{ at: Date }[]>`select now() + ${ms} * interval '1 millisecond' as at`
  return at!
}

/**
 * Until the database's clock has passed `at`.
 * @example await databaseClockPassed(db.sql, goLive)
 */
export function databaseClockPassed(sql: Sql, at: Date): Promise<void> {
  return waitFor('the database clock passes the go-live', async () => (await sql<{ passed: boolean }[]>`select now() >= ${at} as passed`)[0]!.passed)
}

/**
 * Whether the database's clock, read at this moment (not at a transaction's start), is still before `at`:
 * a test whose steps took it past a go-live it meant to come after them says so rather than fail on another, right, answer.
 * @example expect(await stillBefore(db.sql, goLive), 'too slow a machine to judge').toBe(true)
 */
export async function stillBefore(sql: Sql, at: Date): Promise<boolean> {
  const [{ before }] = await sql<{ before: boolean }[]>`select clock_timestamp() < ${at} as before`
  return before!
}
