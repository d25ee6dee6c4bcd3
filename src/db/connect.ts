import postgres from 'postgres'
import type { Config } from '../config'
import { setHeavyLane } from './lanes'

export type Sql = postgres.Sql

export interface ConnectOptions {
  max?: number
  /** How long to wait for a connection before failing (C22); the driver counts whole seconds. */
  timeoutMs?: number
  /** Called with every statement sent; tests count statements with it. */
  onQuery?: (query: string) => void
  /** The server cancels a statement running longer than this (the service sets it; migrations do not). */
  statementTimeoutMs?: number
  /** Every transaction of the pool is read-only: neither a bug nor an extension can write. */
  readOnly?: boolean
  /**
   * Each statement is planned once per connection (a generic plan), without
   * JIT: the service's statements are shaped so that their generic plans are
   * their best (index ranges, a subquery per relation), and re-planning the list
   * on every request cost as much as running it on small sites.
   */
  planOnce?: boolean
  /** How the connections show in pg_stat_activity: `vitrine` for the service's reads, `vitrine-admin` otherwise. */
  applicationName?: string
}

/**
 * The pool the service reads through (main.ts, and the tests' app): read-only,
 * with the deadline of DATABASE_TIMEOUT_MS on connecting and on each statement,
 * and a heavy lane of DATABASE_HEAVY_MAX places (C47, lanes.ts).
 * Migrations and demo content use connections of their own.
 * @example const sql = openReadPool(config.databaseUrl!, config)
 */
export function openReadPool(
  url: string,
  config: Pick<Config, 'databasePoolMax' | 'databaseTimeoutMs' | 'databaseHeavyMax' | 'databaseHeavyQueue'>,
  onQuery?: (query: string) => void,
): Sql {
  const sql = connectDatabase(url, {
    max: config.databasePoolMax,
    timeoutMs: config.databaseTimeoutMs,
    statementTimeoutMs: config.databaseTimeoutMs,
    readOnly: true,
    planOnce: true,
    applicationName: 'vitrine',
    onQuery,
  })
  setHeavyLane(sql, { slots: Math.min(config.databaseHeavyMax, config.databasePoolMax), line: config.databaseHeavyQueue })
  return sql
}

/**
 * Seconds to wait before connecting again after a failed connection, by the
 * number of failures in a row. postgres.js grows this to 20 s, shared by the
 * whole pool, so a pool that saw a short outage kept requests waiting long
 * after the database was back. Ours stays under a quarter of a second: the
 * service recovers within a second of the database, and a refused connection
 * fails a request at once instead of after a long pause.
 */
function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.01 * 2 ** failures, 0.25) * (0.5 + Math.random() / 2)
}

/**
 * A postgres.js pool set up the way the service reads: UTC session time zone,
 * notices ignored, `int8` parsed to a JavaScript number (ids stay far below 2^53).
 * @example const sql = connectDatabase('postgres://localhost/vitrine')
 */
export function connectDatabase(url: string, options: ConnectOptions = {}): Sql {
  const timeoutSeconds = Math.max(1, Math.ceil((options.timeoutMs ?? 5000) / 1000))
  return postgres(url, {
    max: options.max ?? 10,
    connect_timeout: timeoutSeconds,
    idle_timeout: 60,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    // No extra round trip on connect: the service reads no custom array types.
    fetch_types: false,
    connection: {
      application_name: options.applicationName ?? 'vitrine-admin',
      TimeZone: 'UTC',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
      ...(options.readOnly ? { default_transaction_read_only: true } : {}),
      ...(options.planOnce ? { plan_cache_mode: 'force_generic_plan', jit: 'off' } : {}),
    },
    types: {
      bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) },
    },
    debug: options.onQuery ? (_connection, query) => options.onQuery!(query) : undefined,
  })
}

/**
 * Rejects with code `DATABASE_TIMEOUT` when `work` has not settled within
 * `ms`: a database that hangs (not merely refuses) still gets a bounded 503
 * (C22). `cancel` then withdraws the work (a queued statement leaves the
 * queue, a running one is cancelled), so abandoned statements do not pile up.
 * @example const [row] = await withDeadline(statement, 5000, () => statement.cancel())
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, cancel?: () => unknown): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // A cancel request to a frozen server may itself fail: nothing waits for it.
      Promise.resolve()
        .then(cancel)
        .catch(() => {})
      reject(Object.assign(new Error(`The database did not answer within ${ms} ms.`), { code: 'DATABASE_TIMEOUT' }))
    }, ms)
  })
  // The late answer, or failure, of work given up on must not surface as an unhandled rejection.
  work.catch(() => {})
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}
