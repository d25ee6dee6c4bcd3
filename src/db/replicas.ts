import type { PendingQuery, Row } from 'postgres'
import type { AnswerTypes } from '../cache/answer-store'
import type { Config } from '../config'
import type { Logger } from '../log'
import { openReadPool, type Sql } from './connect'
import { NotifiedPositions, parsePosition } from './notified-positions'
import { DatabaseUnavailableError, nameServer, routeReads, runRead, type ReadRouter } from './read'
import { recordReplica } from '../metrics/families'

/** How often every replica's health and replay position are checked. */
const CHECK_EVERY_MS = 1000
/** A server not in recovery (no standby) has replayed nothing: it never serves. */
const NOTHING = -1n
const NOT_CHECKED = 'not checked yet'
/** The column the replay position comes back in, taken off the rows before anyone sees them. */
const REPLAY_COLUMN = 'vitrine_replay_position'

/** A replica as /readyz and the logs describe it. */
export interface ReplicaStatus {
  /** host:port/database, never the user or password. */
  name: string
  serving: boolean
  /** Why it does not serve. */
  reason?: string
}

interface Replica {
  /** Its place in DATABASE_READ_URLS, from 0: its label in the metrics (C53). */
  index: number
  name: string
  pool: Sql
  serving: boolean
  reason: string | undefined
  /**
   * A WAL position the replica had replayed before some statement of ours
   * on it ended: every statement sent after that sees the commits up to it.
   */
  replayed: bigint
  checking: boolean
}

export interface ReplicaOptions {
  /** REPLICA_MAX_LAG_MS. */
  maxLagMs: number
  /** DATABASE_TIMEOUT_MS, for the health checks. */
  timeoutMs: number
  log: Logger
}

/**
 * C50: content reads spread over streaming replicas, round robin among those
 * in the rotation, with C36 kept. An answer read from a replica is returned
 * only when that replica had replayed the last change notified for the
 * answer's content type (NotifiedPositions) before the statement was sent;
 * otherwise the statement runs again on a replica known to have replayed it,
 * or on the primary. Each replica statement reads the replica's replay
 * position in the same statement (a wrapping select): the snapshot of a
 * statement is taken before that function runs, so the position it reads
 * vouches for the statements sent after it ends, not for itself.
 *
 * A replica whose read fails to connect or loses its connection leaves the
 * rotation and the read is tried elsewhere within the same deadline (C22); so
 * does one further behind the last notified change than REPLICA_MAX_LAG_MS,
 * or one that is not a standby. Every replica is checked every second, and
 * comes back when it answers and is caught up. With none in the rotation,
 * reads go to the primary.
 * @example const replicas = new ReadReplicas(sql, [{ name, pool }], positions, { maxLagMs: 5000, timeoutMs: 5000, log })
 */
export class ReadReplicas implements ReadRouter {
  readonly #replicas: Replica[]
  #turn = 0
  #timer: ReturnType<typeof setInterval> | undefined

  constructor(
    readonly primary: Sql,
    replicas: readonly { name: string; pool: Sql }[],
    readonly positions: NotifiedPositions,
    private readonly options: ReplicaOptions,
  ) {
    // Out of the rotation until a first check finds it a standby, caught up.
    this.#replicas = replicas.map(({ name, pool }, index) => ({ index, name, pool, serving: false, reason: NOT_CHECKED, replayed: NOTHING, checking: false }))
  }

  /** Checks every replica now and every CHECK_EVERY_MS from now on; resolves when the first checks are done. */
  async start(): Promise<void> {
    this.#timer ??= setInterval(() => void this.checkAll(), CHECK_EVERY_MS)
    await this.checkAll()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    this.positions.stop()
    await Promise.all(this.#replicas.map((replica) => replica.pool.end({ timeout: 5 })))
  }

  get status(): ReplicaStatus[] {
    return this.#replicas.map(({ name, serving, reason }) => (serving ? { name, serving } : { name, serving, reason }))
  }

  async read<T extends readonly Row[]>(build: (sql: Sql) => PendingQuery<T>, timeoutMs: number, options: { heavy: boolean; answerType: (rows: T) => AnswerTypes }): Promise<T> {
    const deadline = performance.now() + timeoutMs
    // Nobody listens, or everything changed a moment ago: no replica can be shown to be current.
    let replica = this.positions.required(null) === null ? undefined : this.#next()
    for (let attempt = 1; replica && attempt <= 2; attempt++) {
      const vouched = replica.replayed
      let rows: T
      try {
        rows = await runRead(replica.pool, (db) => withReplayPosition(db, build(db)), Math.max(1, deadline - performance.now()), { heavy: options.heavy, retryLost: false })
      } catch (error) {
        if (!(error instanceof DatabaseUnavailableError) || error.reason === 'busy' || error.reason === 'timeout') {
          // A cheap statement that found no answer in time: the replica hangs.
          if (error instanceof DatabaseUnavailableError && error.reason === 'timeout' && !options.heavy) this.#leave(replica, `no answer within ${timeoutMs} ms`)
          throw error
        }
        // Recovery conflicts (overloaded) end one statement, not the replica: it stays in the rotation, the read goes elsewhere.
        if (error.reason !== 'overloaded') this.#leave(replica, `failed (${error.reason}): ${error.code ?? error.message}`)
        replica = this.#next(undefined, replica)
        continue
      }
      const replayed = takeReplayPosition(rows)
      if (replayed !== null && replayed > replica.replayed) replica.replayed = replayed
      const required = this.positions.required(options.answerType(rows))
      if (required !== null && vouched >= required) return rows
      // From before the last notified change of its type: a replica shown to have replayed it, else the primary.
      replica = required === null ? undefined : this.#next(required)
    }
    return runRead(this.primary, build, Math.max(1, deadline - performance.now()), { heavy: options.heavy })
  }

  /** Checks each replica not being checked: its replay position, whether it is a standby, how far behind it is. */
  async checkAll(): Promise<void> {
    await Promise.all(this.#replicas.filter((replica) => !replica.checking).map((replica) => this.#check(replica)))
    const serving = this.#replicas.filter((replica) => replica.serving)
    if (serving.length) this.positions.forgetReplayed(serving.reduce((least, replica) => (replica.replayed < least ? replica.replayed : least), serving[0].replayed))
  }

  async #check(replica: Replica): Promise<void> {
    replica.checking = true
    try {
      const [row] = await runRead(replica.pool, (db) => db<{ replayed: string | null }[]>`
        select pg_last_wal_replay_lsn()::text as replayed
      `, Math.min(this.options.timeoutMs, 2000))
      if (row.replayed === null) return this.#leave(replica, 'not a standby (it is not in recovery)')
      const replayed = parsePosition(row.replayed)
      if (replayed > replica.replayed) replica.replayed = replayed
      const lagMs = this.positions.lagMs(replica.replayed)
      recordReplica(replica.index, lagMs / 1000, lagMs <= this.options.maxLagMs)
      if (lagMs > this.options.maxLagMs) return this.#leave(replica, `lagging ${Math.round(lagMs)} ms behind the last notified change`)
      if (!replica.serving) {
        replica.serving = true
        replica.reason = undefined
        this.options.log.info('a read replica is in the rotation', { replica: replica.name })
      }
    } catch (error) {
      this.#leave(replica, `failed: ${error instanceof Error ? error.message : String(error)}`)
    } finally {
      replica.checking = false
    }
  }

  #leave(replica: Replica, reason: string): void {
    // Said once when it leaves, and at the first check when it does not serve from the start.
    const news = replica.serving || replica.reason === NOT_CHECKED
    replica.serving = false
    replica.reason = reason
    recordReplica(replica.index, null, false)
    if (news) this.options.log.warn('a read replica left the rotation: its reads go elsewhere until a check finds it well', { replica: replica.name, reason })
  }

  /** The next replica in the rotation (that has replayed `required`, when given; other than `failed`). */
  #next(required?: bigint, failed?: Replica): Replica | undefined {
    const count = this.#replicas.length
    for (let step = 0; step < count; step++) {
      const replica = this.#replicas[this.#turn++ % count]
      if (replica.serving && replica !== failed && (required === undefined || replica.replayed >= required)) return replica
    }
    return undefined
  }
}

/**
 * DATABASE_READ_URLS (C50): a read pool per replica, as the primary's (its
 * own heavy lane), and `primary`'s content reads routed through them. The
 * positions must hear the change listener (`positions`, among its handlers);
 * `start()` begins the checks. Undefined when no replica is configured.
 * `onQuery` hears every statement sent to a replica (tests count them).
 * @example const replicas = openReadReplicas(sql, config, log); await replicas?.start()
 */
export function openReadReplicas(
  primary: Sql,
  config: Pick<Config, 'databaseReadUrls' | 'replicaMaxLagMs' | 'databasePoolMax' | 'databaseTimeoutMs' | 'databaseHeavyMax' | 'databaseHeavyQueue'>,
  log: Logger,
  onQuery?: (replica: string, query: string) => void,
): ReadReplicas | undefined {
  if (config.databaseReadUrls.length === 0) return undefined
  const timeoutMs = config.databaseTimeoutMs
  const positions = new NotifiedPositions(async () => {
    const [row] = await runRead(primary, (db) => db<{ position: string }[]>`
      select pg_current_wal_insert_lsn()::text as position
    `, timeoutMs)
    return parsePosition(row.position)
  }, log)
  const pools = config.databaseReadUrls.map((url, index) => {
    const name = replicaName(url)
    const pool = openReadPool(url, config, onQuery && ((query) => onQuery(name, query)))
    nameServer(pool, `replica-${index}`)
    return { name, pool }
  })
  const replicas = new ReadReplicas(primary, pools, positions, { maxLagMs: config.replicaMaxLagMs, timeoutMs, log })
  routeReads(primary, replicas)
  return replicas
}

/**
 * The statement with the replica's replay position as one more column, read
 * by the same statement (no round trip more). A subquery with `order by` is
 * scanned in its order.
 */
function withReplayPosition<T extends readonly Row[]>(db: Sql, statement: PendingQuery<T>): PendingQuery<T> {
  return db<T>`
    select answer.*, pg_last_wal_replay_lsn()::text as vitrine_replay_position
    from (${statement}) as answer
  `
}

/** The replay position the rows carry, taken off them; null when there is no row. */
function takeReplayPosition(rows: readonly Row[]): bigint | null {
  let text: string | null = null
  for (const row of rows) {
    text ??= row[REPLAY_COLUMN] as string | null
    delete row[REPLAY_COLUMN]
  }
  return text === null ? null : parsePosition(text)
}

/**
 * host:port/database of a URL, for the logs and /readyz: never its user or password.
 * @example replicaName('postgres://reader:secret@replica-1:5432/cms') // 'replica-1:5432/cms'
 */
export function replicaName(url: string): string {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`
}
