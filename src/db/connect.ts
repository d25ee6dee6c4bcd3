import postgres from 'postgres'

export type Sql = postgres.Sql

export interface ConnectOptions {
  max?: number
  /** How long to wait for a connection before failing (C22); the driver counts whole seconds. */
  timeoutMs?: number
  /** Called with every statement sent; tests count statements with it. */
  onQuery?: (query: string) => void
  /** The server cancels a statement running longer than this (the service sets it; migrations do not). */
  statementTimeoutMs?: number
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
    onnotice: () => {},
    // No extra round trip on connect: the service reads no custom array types.
    fetch_types: false,
    connection: {
      application_name: 'vitrine',
      TimeZone: 'UTC',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
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
