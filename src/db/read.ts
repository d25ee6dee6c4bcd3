import type { PendingQuery, Row } from 'postgres'
import type { AnswerTypes } from '../cache/answer-store'
import { withDeadline, type Sql } from './connect'
import { heavyAdmissions, heavyLaneOf, LaneRefusal } from './lanes'
import { recordHeavyLaneRefused, recordStatement } from '../metrics/families'

/**
 * Why the database could not answer. None of them is the client's fault, nor
 * a bug in the request: each is a 503 with Retry-After (C22).
 * - `connect`: no connection could be had (refused, unreachable, a startup error
 *   such as 55000 "not accepting connections", 3D000, 28P01), whatever its code;
 * - `lost`: the connection broke while the statement was on it;
 * - `timeout`: no answer within DATABASE_TIMEOUT_MS, or statement_timeout (57014);
 * - `overloaded`: the server cannot run it now (SQLSTATE classes 53, 57, 58; 40001 and
 *   40P01, which a replica's recovery conflicts raise);
 * - `busy`: a heavy statement found its pool's heavy lane and line full, or its
 *   deadline passed in the line (C47, src/db/lanes.ts); it was never sent.
 */
export type UnavailableReason = 'connect' | 'lost' | 'timeout' | 'overloaded' | 'busy'

/** The database could not answer; `code` is the driver's or the server's, for the log. */
export class DatabaseUnavailableError extends Error {
  readonly code: string | undefined
  constructor(
    readonly reason: UnavailableReason,
    cause: unknown,
  ) {
    super(`The database is unavailable (${reason}): ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'DatabaseUnavailableError'
    this.code = codeOf(cause)
  }

  /** Failures that will not heal by themselves: the operator must act. */
  get needsOperator(): boolean {
    return this.code !== undefined && NEEDS_OPERATOR.has(this.code)
  }
}

/** Wrong password or role, no such database, no pg_hba.conf entry: retrying will not help. */
const NEEDS_OPERATOR = new Set(['28P01', '28000', '3D000', '42501'])

/** The driver's codes for a connection that broke, and the server's for a backend that is going away. */
const CONNECTION_LOST = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED',
  'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  '57P01', '57P02', '57P03',
])

/** How long a retry waits after a lost connection. */
const RETRY_PAUSE_MS = 20

/** While connecting fails, one request in this many milliseconds tries again; the others get their 503 at once. */
const PROBE_EVERY_MS = 100

/** Whether a pool's last attempt to connect failed, and when a request last tried again. */
interface PoolHealth {
  refusing: DatabaseUnavailableError | null
  lastProbe: number
  /** The server label of its statements' metric (C53): `primary`, or `replica-<index>` (nameServer). */
  server: string
}

const health = new WeakMap<object, PoolHealth>()
const serverNames = new WeakMap<object, string>()

/**
 * How the statement metric names the server a pool reads (C53); a pool not named is the primary.
 * @example nameServer(replicaPool, 'replica-0')
 */
export function nameServer(pool: Sql, name: string): void {
  serverNames.set(pool, name)
}

/**
 * Runs one read statement within `timeoutMs`. A statement whose connection
 * is lost is run once more, on another connection, inside the same deadline:
 * reads are idempotent, so a failover or a pooler restart costs the client
 * nothing. A statement given up on is cancelled (C22). While the database
 * refuses connections, requests fail at once instead of queueing for a
 * connection until their deadline; one request every PROBE_EVERY_MS tries
 * again, so the service serves again within that time of the database.
 * Database faults come out as DatabaseUnavailableError; anything else (a bug)
 * as it was.
 *
 * A `heavy` statement (C47) first waits for a place in the pool's heavy lane,
 * within the same deadline, and keeps its connection to itself while it runs:
 * the driver pipelines a statement onto a busy connection when none is idle,
 * and a cheap one queued behind a deep page would wait as long as it.
 *
 * A statement that says which content type it answers for (`answerType`)
 * may be read from a replica, when the pool has them (C50, routeReads): it
 * is then built with that replica's pool, which `build` is given.
 *
 * A heavy statement run for a request is first admitted by the request's
 * heavy quota (C52, `heavyAdmissions`), which may refuse it with a 429.
 * @example const [row] = await runRead(sql, (db) => db`select 1 as one`, 5000)
 */
export async function runRead<T extends readonly Row[]>(pool: Sql, build: (sql: Sql) => PendingQuery<T>, timeoutMs: number, options: ReadOptions<T> = {}): Promise<T> {
  if (options.heavy) heavyAdmissions.getStore()?.admit()
  const router = options.answerType && readRouters.get(pool)
  if (router) return router.read(build, timeoutMs, { heavy: options.heavy ?? false, answerType: options.answerType! })
  const { heavy = false, retryLost = true } = options
  const state = health.get(pool) ?? { refusing: null, lastProbe: 0, server: serverNames.get(pool) ?? 'primary' }
  health.set(pool, state)
  if (state.refusing) {
    if (performance.now() - state.lastProbe < PROBE_EVERY_MS) throw state.refusing
    state.lastProbe = performance.now()
  }
  const deadline = performance.now() + timeoutMs
  const lane = heavy ? heavyLaneOf(pool) : undefined
  const statement = () => build(pool)
  if (!lane) return runWithin(state, statement, deadline, false, retryLost)
  const leave = await enterLane(lane, timeoutMs)
  // Admitted with too little time left to answer: give the place on rather than send a statement bound to be cancelled.
  if (deadline - performance.now() < Math.min(MIN_HEAVY_TIME_MS, timeoutMs / 10)) {
    leave()
    recordHeavyLaneRefused()
    throw new DatabaseUnavailableError('busy', new LaneRefusal('HEAVY_WAIT_TIMEOUT', 'A heavy place came free too late to run the statement within the deadline.'))
  }
  const sent: { statement?: Promise<unknown> } = {}
  try {
    return await runWithin(state, statement, deadline, true, retryLost, sent)
  } finally {
    leaveWhenSettled(leave, sent.statement, timeoutMs)
  }
}

export interface ReadOptions<T> {
  /** C47: the statement waits for a place in its pool's heavy lane. */
  heavy?: boolean
  /**
   * C50: the content type the rows answer for (as the cache keeps it: an id,
   * ANY_TYPE, or null for none but everything). A statement that says it may
   * be read from a replica (src/db/replicas.ts); one that does not (sync, which
   * needs the primary's positions) always reads the pool it is given.
   */
  answerType?: (rows: T) => AnswerTypes
  /** A lost connection is tried once more on the same pool (C22); a replica's read is tried elsewhere instead. */
  retryLost?: boolean
}

/** What reads a statement that may come from a replica, in place of the pool it was given (src/db/replicas.ts). */
export interface ReadRouter {
  read<T extends readonly Row[]>(build: (sql: Sql) => PendingQuery<T>, timeoutMs: number, options: { heavy: boolean; answerType: (rows: T) => AnswerTypes }): Promise<T>
}

const readRouters = new WeakMap<object, ReadRouter>()

/**
 * From now on, the statements run on `pool` that say which content type they
 * answer for (`answerType`) are read through `router` (C50).
 * @example routeReads(sql, replicas)
 */
export function routeReads(pool: Sql, router: ReadRouter): void {
  readRouters.set(pool, router)
}

/** A heavy statement admitted with less time than this left is not sent (C47). */
const MIN_HEAVY_TIME_MS = 50

/**
 * A statement given up on (its deadline passed) was cancelled, but runs until
 * the server sees the cancel: its heavy place is given back when it has
 * settled, so that no more than DATABASE_HEAVY_MAX heavy statements run at
 * once. A server that never answers (its connection neither answers nor
 * closes) would keep the place for good: it comes back after `graceMs` anyway.
 */
function leaveWhenSettled(leave: () => void, statement: Promise<unknown> | undefined, graceMs: number): void {
  if (!statement) return leave()
  const timer = setTimeout(leave, graceMs)
  statement.then(
    () => (clearTimeout(timer), leave()),
    () => (clearTimeout(timer), leave()),
  )
}

async function enterLane(lane: NonNullable<ReturnType<typeof heavyLaneOf>>, waitMs: number): Promise<() => void> {
  try {
    return await lane.enter(waitMs)
  } catch (error) {
    if (error instanceof LaneRefusal) {
      recordHeavyLaneRefused()
      throw new DatabaseUnavailableError('busy', error)
    }
    throw error
  }
}

/** The statement, retried once on a lost connection, within the deadline. */
async function runWithin<T extends readonly Row[]>(state: PoolHealth, build: () => PendingQuery<T>, deadline: number, keepConnection: boolean, retryLost: boolean, sent: { statement?: Promise<unknown> } = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const statement = build()
    sent.statement = statement
    // The driver's per-statement hook (connection.js execute): false marks the connection full until the statement ends.
    if (keepConnection) (statement as unknown as { options: { onexecute?: () => boolean } }).options.onexecute = () => false
    const startedAt = performance.now()
    try {
      const rows = await withDeadline(statement, Math.max(1, deadline - performance.now()), () => statement.cancel())
      state.refusing = null
      // C53: statements have no names yet; their lane (C47) tells the costly from the cheap.
      recordStatement(keepConnection ? 'heavy' : 'cheap', state.server, (performance.now() - startedAt) / 1000)
      return rows
    } catch (error) {
      recordStatement(keepConnection ? 'heavy' : 'cheap', state.server, (performance.now() - startedAt) / 1000)
      const failure = toDatabaseFailure(error, wasSent(statement))
      if (failure?.reason === 'connect') {
        state.refusing = failure
        state.lastProbe = performance.now()
      }
      if (failure?.reason !== 'lost' || !retryLost || attempt > 1 || performance.now() + RETRY_PAUSE_MS >= deadline) throw failure ?? error
      // A failover ends every connection at once: give the pool a moment to see the others
      // close, so that the retry gets a connection that is alive rather than the next dead one.
      await Bun.sleep(RETRY_PAUSE_MS)
    }
  }
}

/**
 * Sorts a failure by where it happened rather than by a list of codes that
 * would always miss one: before the statement reached a connection, any
 * failure is a failure to connect. Null: not a database fault (a bug, 500).
 * @example toDatabaseFailure(Object.assign(new Error(), { code: '55000' }), false)?.reason // 'connect'
 */
export function toDatabaseFailure(error: unknown, sent: boolean): DatabaseUnavailableError | null {
  if (error instanceof DatabaseUnavailableError) return error
  const code = codeOf(error)
  if (code === 'DATABASE_TIMEOUT' || code === '57014') return new DatabaseUnavailableError('timeout', error)
  if (!sent) return new DatabaseUnavailableError('connect', error)
  if (code !== undefined && (CONNECTION_LOST.has(code) || code.startsWith('08'))) return new DatabaseUnavailableError('lost', error)
  // Out of resources (53), operator intervention (57), a system error (58), or a read
  // cancelled by a conflict with recovery on a replica (40001, 40P01): the server's state, not the request.
  if (code !== undefined && /^(53|57|58|40001|40P01)/.test(code)) return new DatabaseUnavailableError('overloaded', error)
  return null
}

/**
 * postgres.js sets a statement's `state` (its connection's backend) when it
 * writes it to a connection; until then the statement was never sent.
 */
function wasSent(statement: object): boolean {
  return (statement as unknown as { state: unknown }).state != null
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
