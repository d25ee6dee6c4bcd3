import postgres from 'postgres'
import { withDeadline } from '../db/connect'
import type { Logger } from '../log'

/** The advisory lock key of the purge duty: one holder per database, whatever the instances (C51). */
export const PURGE_DUTY_LOCK = 5_105_105_101

export interface PurgeDutyOptions {
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
 * The purge duty among the instances sharing a database (C51): a session
 * advisory lock, taken on a connection of its own to the primary. The server
 * releases it when that connection goes (a process stopped or killed, a
 * network cut), and a waiting instance takes it within `checkMs`. A holder
 * whose connection fails a check stops purging at once: two holders for a
 * moment would only purge twice; none at all is what the lock prevents.
 * @example const duty = takePurgeDuty(url, { timeoutMs: 5000, log, onTaken, onDropped })
 */
export function takePurgeDuty(url: string, options: PurgeDutyOptions): { stop(): Promise<void> } {
  const checkMs = options.checkMs ?? 1000
  let stopped = false
  let held = false
  let sql: postgres.Sql | undefined
  let timer: ReturnType<typeof setTimeout> | undefined

  const drop = (reason: unknown) => {
    if (held) {
      held = false
      options.log.warn('edge purge: the purge duty is lost; another instance may take it', { reason: reason instanceof Error ? reason.message : String(reason) })
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
          connection: { application_name: 'vitrine-purger' },
          onclose: () => {
            if (sql === opened) drop('the purge duty connection closed')
          },
        })
        sql = opened
      }
      const connection = sql
      if (held) {
        await withDeadline(connection`select 1`, options.timeoutMs)
      } else {
        const [row] = await withDeadline(connection<{ taken: boolean }[]>`select pg_try_advisory_lock(${PURGE_DUTY_LOCK}::int8) as taken`, options.timeoutMs)
        if (row.taken && sql === connection && !stopped) {
          held = true
          options.log.info('edge purge: this instance holds the purge duty')
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
