import postgres from 'postgres'
import { withDeadline } from '../db/connect'
import type { Logger } from '../log'

/** The channel the triggers of sql/migrations/0002_change_notifications.sql notify. */
export const CHANGES_CHANNEL = 'vitrine_changes'

/** Payloads of the listeners' own heartbeats, never changes. */
const HEARTBEAT_PREFIX = 'vitrine_heartbeat:'

/** What a committed write can have changed: the answers of some content types, or of all. */
export interface Change {
  table: string
  typeIds: ReadonlySet<number> | 'all'
}

/** The configured languages, which decide the language a request resolves to (C9). */
export interface LanguageSet {
  codes: ReadonlySet<string>
  defaultCode: string | null
}

export interface ChangeHandlers {
  /** LISTEN is in place: nothing committed from now on can be missed. */
  onListening(languages: LanguageSet): void
  /** The listening connection is gone: notifications may be missed until onListening. */
  onLost(): void
  onChange(change: Change): void
  /** The languages were read again after a change of the languages table. */
  onLanguages(languages: LanguageSet): void
}

/**
 * One set of handlers that tells each of `handlers`, in order (the cache, the replicas' positions, the event feed).
 * Each is told apart from the others: one that throws is logged and never keeps the next from hearing the
 * change, nor reaches the listener (a throw there would cost the connection and bypass every cache).
 * A handler that throws on a change (or on new languages) may have missed it, as if nobody had listened:
 * it is told `onLost`, then `onListening` again, as after a lost connection (the cache drops every answer
 * and keeps new ones; the event feed and the purger read the change log again). A handler whose
 * `onListening` throws stays as `onLost` left it (the cache then answers nothing from memory).
 * @example listenForChanges(url, everyHandler([cache, positions, feed], log), options)
 */
export function everyHandler(handlers: readonly ChangeHandlers[], log: Logger): ChangeHandlers {
  let languages: LanguageSet | undefined
  const tell = (handler: ChangeHandlers, event: keyof ChangeHandlers, call: (handler: ChangeHandlers) => void): boolean => {
    try {
      call(handler)
      return true
    } catch (error) {
      log.error('a change handler failed; the others were told', { event, handler: handler.constructor.name, error })
      return false
    }
  }
  const tellEach = (event: keyof ChangeHandlers, call: (handler: ChangeHandlers) => void) => {
    for (const handler of handlers) {
      if (tell(handler, event, call) || (event !== 'onChange' && event !== 'onLanguages') || languages === undefined) continue
      // It may have missed this change: it starts again, as after a lost connection.
      const heardAgain = languages
      if (tell(handler, 'onLost', (each) => each.onLost())) tell(handler, 'onListening', (each) => each.onListening(heardAgain))
    }
  }
  return {
    onListening: (heard) => {
      languages = heard
      tellEach('onListening', (each) => each.onListening(heard))
    },
    onLost: () => tellEach('onLost', (each) => each.onLost()),
    onChange: (change) => tellEach('onChange', (each) => each.onChange(change)),
    onLanguages: (heard) => {
      languages = heard
      tellEach('onLanguages', (each) => each.onLanguages(heard))
    },
  }
}

export interface ChangeListener {
  stop(): Promise<void>
}

export interface ListenOptions {
  /** Deadline for connecting, LISTEN and each heartbeat. */
  timeoutMs: number
  /** How often the connection proves it is alive; a silent one is replaced. */
  heartbeatMs?: number
  log: Logger
}

/**
 * Listens for the database's change notifications on a connection of its
 * own (`DATABASE_LISTEN_URL`, never the read pool: a read replica cannot
 * LISTEN). The connection is replaced whenever it closes or misses a
 * heartbeat; `onLost` and `onListening` tell the cache when to bypass itself.
 * @example const listener = listenForChanges(url, { onListening, onLost, onChange, onLanguages }, { timeoutMs: 5000, log })
 */
export function listenForChanges(url: string, handlers: ChangeHandlers, options: ListenOptions): ChangeListener {
  const heartbeatMs = options.heartbeatMs ?? 1000
  let stopped = false
  let listening = false
  let sql: postgres.Sql | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined

  const lose = (reason: unknown) => {
    clearInterval(heartbeat)
    if (listening) {
      listening = false
      handlers.onLost()
      options.log.warn('change notifications lost: the response cache is bypassed until they are back', { reason: describe(reason) })
    }
    const old = sql
    sql = undefined
    void old?.end({ timeout: 0 }).catch(() => {})
    if (!stopped) setTimeout(establish, 100)
  }

  // Language reads may overtake each other: only the latest read of the current connection counts.
  let languageReads = 0
  const readLanguages = async (connection: postgres.Sql): Promise<LanguageSet | null> => {
    const read = ++languageReads
    const rows = await withDeadline(connection<{ code: string; is_default: boolean }[]>`select code, is_default from languages`, options.timeoutMs)
    if (read !== languageReads || sql !== connection) return null
    return { codes: new Set(rows.map((row) => row.code)), defaultCode: rows.find((row) => row.is_default)?.code ?? null }
  }

  // The heartbeat goes through the notifications themselves: a connection that answers
  // queries but hears nothing (a transaction pooler in between) is not listening.
  let heartbeatToken = ''
  let heartbeatHeard: (() => void) | undefined
  const beat = async (connection: postgres.Sql) => {
    const token = `${HEARTBEAT_PREFIX}${crypto.randomUUID()}`
    const heard = new Promise<void>((resolve) => {
      heartbeatToken = token
      heartbeatHeard = resolve
    })
    await withDeadline(Promise.all([connection`select pg_notify(${CHANGES_CHANNEL}, ${token})`, heard]), options.timeoutMs)
  }

  const establish = async () => {
    if (stopped || sql) return
    const connection = postgres(url, {
      max: 1,
      // A listening connection is never idle, and must not be recycled under our feet.
      idle_timeout: 0,
      max_lifetime: null,
      connect_timeout: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
      fetch_types: false,
      onnotice: () => {},
      connection: { application_name: 'vitrine-listener', default_transaction_read_only: true },
      onnotify: (channel: string, payload: string) => {
        if (channel !== CHANGES_CHANNEL || sql !== connection) return
        // Every process's heartbeats come by; only ours is awaited, none is a change.
        if (payload.startsWith(HEARTBEAT_PREFIX)) {
          if (payload === heartbeatToken) heartbeatHeard?.()
          return
        }
        const change = parseChange(payload)
        handlers.onChange(change)
        if (change.table === 'languages') {
          readLanguages(connection).then(
            (languages) => languages && handlers.onLanguages(languages),
            (error) => sql === connection && lose(error),
          )
        }
      },
      onclose: () => {
        if (sql === connection) lose('the listening connection closed')
      },
      // postgres.js supports onnotify; its type declarations leave it out.
    } as postgres.Options<{}>)
    sql = connection
    try {
      await withDeadline(connection.unsafe(`listen ${CHANGES_CHANNEL}`), options.timeoutMs)
      await beat(connection)
      let languages: LanguageSet | null = null
      while (languages === null && sql === connection) languages = await readLanguages(connection)
      if (sql !== connection || languages === null) return
      listening = true
      handlers.onListening(languages)
      options.log.info('listening for change notifications', { channel: CHANGES_CHANNEL })
      let beating = false
      heartbeat = setInterval(() => {
        if (beating) return
        beating = true
        beat(connection)
          .catch((error) => {
            if (sql === connection) lose(error)
          })
          .finally(() => (beating = false))
      }, heartbeatMs)
    } catch (error) {
      if (sql === connection) lose(error)
    }
  }

  void establish()
  return {
    async stop() {
      stopped = true
      clearInterval(heartbeat)
      const last = sql
      sql = undefined
      await last?.end({ timeout: 1 })
    },
  }
}

/**
 * `entries:3,7` → types 3 and 7; `languages:*` → everything.
 * @example parseChange('entries:3,7') // { table: 'entries', typeIds: Set { 3, 7 } }
 */
export function parseChange(payload: string): Change {
  const at = payload.lastIndexOf(':')
  const table = at === -1 ? payload : payload.slice(0, at)
  const ids = at === -1 ? '*' : payload.slice(at + 1)
  if (ids === '*' || !/^\d+(,\d+)*$/.test(ids)) return { table, typeIds: 'all' }
  return { table, typeIds: new Set(ids.split(',').map(Number)) }
}

function describe(reason: unknown): string {
  return reason instanceof Error ? `${(reason as { code?: string }).code ?? reason.name}: ${reason.message}` : String(reason)
}
