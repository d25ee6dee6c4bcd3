import postgres from 'postgres'
import { withDeadline } from './connect'
import type { Logger } from '../log'

export interface DutyOptions {
  /** The advisory lock's key: one holder per database and key, whatever the instances. */
  lock: number
  /** What the duty is, for the log: `edge purge`, `webhooks`. */
  name: string
  /** The connection's application_name (pg_stat_activity). */
  applicationName: string
  /** DATABASE_TIMEOUT_MS: the deadline of connecting and of each check. */
  timeoutMs: number
  /** How often a holder proves its connection alive, and a waiter asks for the lock again. */
  checkMs?: number
  log: Logger
  /** This instance holds the duty now. */
  onTaken(): void
  /** It holds it no more (its connection is gone): another instance may take it. */
  onDropped(): void
}

/**
 * A duty one instance among those sharing a database holds (the edge purge,
 * C51; the delivery of webhooks, C57): a session
 * advisory lock, taken on a connection of its own to the primary. The server
 * releases it when that connection goes (a process stopped or killed, a
 * network cut), and a waiting instance takes it within `checkMs`. A holder
 * whose connection fails a check stops at once: two holders for a moment
 * would only do the work twice; none at all is what the lock prevents.
 * @example const duty = takeDuty(url, { lock: PURGE_DUTY_LOCK, name: 'edge purge', applicationName: 'vitrine-purger', timeoutMs: 5000, log, onTaken, onDropped })
 */
export function takeDuty(url: string, options: DutyOptions): { stop(): Promise<void> } {
  const checkMs = options.checkMs ?? 1000
  let stopped = false
  let held = false
  let sql: postgres.Sql | undefined
  let timer: ReturnType<typeof setTimeout> | undefined

  const drop = (reason: unknown) => {
    if (held) {
      held = false
      options.log.warn(`${options.name}: the duty is lost; another instance may take it`, { reason: reason instanceof Error ? reason.message : String(reason) })
      options.onDropped()
    }
    const old = sql
    sql = undefined
    void old?.end({ timeout: 0 }).catch(() => {})
  }

  const check = async () => {
    if (stopped) return
    try {
      if (sql === undefined) {
        const opened: postgres.Sql = postgres(url, {
          max: 1,
          // The lock lives as long as this session: it must never be recycled under our feet.
          idle_timeout: 0,
          max_lifetime: null,
          connect_timeout: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
          fetch_types: false,
          onnotice: () => {},
          connection: { application_name: options.applicationName },
          onclose: () => {
            if (sql === opened) drop('the duty connection closed')
          },
        })
        sql = opened
      }
      const connection = sql
      if (held) {
        await withDeadline(connection`select 1`, options.timeoutMs)
      } else {
        const [row] = await withDeadline(connection<{ taken: boolean }[]>`select pg_try_advisory_lock(${options.lock}::int8) as taken`, options.timeoutMs)
        if (row.taken && sql === connection && !stopped) {
          held = true
          options.log.info(`${options.name}: this instance holds the duty`)
          options.onTaken()
        }
      }
    } catch (error) {
      drop(error)
    }
    if (!stopped) timer = setTimeout(check, checkMs)
  }

  void check()
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      held = false
      const last = sql
      sql = undefined
      await last?.end({ timeout: 1 })
    },
  }
}
