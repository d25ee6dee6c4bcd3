import { createApp } from '../../src/app'
import type { EventFeed } from '../../src/changes/event-feed'
import type { AnswerCache } from '../../src/cache/answer-slot'
import type { NextGoLives } from '../../src/cache/next-go-lives'
import { loadConfig, type Config } from '../../src/config'
import { LiveCountCheck } from '../../src/content/live-count-check'
import { openReadPool, type Sql } from '../../src/db/connect'
import { FilterRegistry } from '../../src/hooks/registry'
import { createLogger, type LogFields, type Logger } from '../../src/log'

export interface TestApp {
  app: ReturnType<typeof createApp>
  sql: Sql
  config: Config
  /** Every statement sent, in order (a test empties it with `statements.length = 0`). */
  statements: string[]
  /** The lines the logger wrote (LOG_LEVEL applied). */
  logs: string[]
  /**
   * Resolves once the app has logged the request line of `url` (path and query,
   * as given to `get`), whatever the level: that line is written after the
   * response is handed over, and LOG_LEVEL may drop it. Wait for this before
   * asserting what was written.
   */
  loggedRequest(url: string): Promise<void>
  get(path: string, init?: RequestInit): Promise<TestResponse>
  /** The check of the kept live entry counts, when asked for (`liveCountCheck: true`); `check()` runs one. */
  liveCounts: LiveCountCheck | undefined
  close(): Promise<void>
}

export interface TestResponse {
  status: number
  headers: Headers
  text: string
  body: any
}

/**
 * The app over a test database, called in process through `app.handle`, with the
 * service's own pool settings (read-only, statement_timeout) and a smaller pool.
 * `poolTimeoutMs` gives the pool a DATABASE_TIMEOUT_MS of its own (its
 * connect_timeout and statement_timeout), apart from the app's deadline.
 * @example const api = testApp(db.url, { MEDIA_BASE_URL: 'https://cdn.example.com' })
 */
export function testApp(
  databaseUrl: string,
  env: Record<string, string> = {},
  filters = new FilterRegistry(),
  cache?: AnswerCache,
  { poolTimeoutMs, liveCountCheck = false, events, goLives }: { poolTimeoutMs?: number; liveCountCheck?: boolean; events?: (sql: Sql, log: Logger) => EventFeed; goLives?: NextGoLives } = {},
): TestApp {
  // NODE_ENV test, as under `bun test`: an extension's output that does not match its declared schema fails the request.
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: databaseUrl, PUBLIC_URL: 'https://cms.example.com', LOG_LEVEL: 'debug', ...env })
  const statements: string[] = []
  const logs: string[] = []
  const requestsLogged: string[] = []
  const waiting: { url: string; resolve: () => void }[] = []
  // A smaller pool than the service's default, unless the test sets DATABASE_POOL_MAX; the heavy lane (C47) as configured.
  const pool = { ...config, databasePoolMax: env.DATABASE_POOL_MAX ? config.databasePoolMax : 4, databaseTimeoutMs: poolTimeoutMs ?? config.databaseTimeoutMs }
  const sql = openReadPool(databaseUrl, pool, (query) => statements.push(query))
  const written = createLogger(config.logLevel, (line) => logs.push(line))
  const noticeRequest = (msg: string, fields?: LogFields) => {
    if (msg !== 'request') return
    const url = `${fields?.path}${fields?.query ? `?${fields.query}` : ''}`
    requestsLogged.push(url)
    for (const waiter of waiting.filter((candidate) => candidate.url === url)) waiter.resolve()
  }
  const log: Logger = {
    debug: (msg, fields) => (written.debug(msg, fields), noticeRequest(msg, fields)),
    info: (msg, fields) => (written.info(msg, fields), noticeRequest(msg, fields)),
    warn: (msg, fields) => (written.warn(msg, fields), noticeRequest(msg, fields)),
    error: (msg, fields) => (written.error(msg, fields), noticeRequest(msg, fields)),
  }
  const liveCounts = liveCountCheck ? new LiveCountCheck(sql, log, (typeIds) => cache?.onChange({ table: 'live_entry_count_deltas', typeIds: new Set(typeIds) })) : undefined
  const app = createApp({ sql, config, log, filters, cache, goLives, liveCounts, events: events?.(sql, log) })
  return {
    app,
    liveCounts,
    sql,
    config,
    statements,
    logs,
    loggedRequest: (url) =>
      requestsLogged.includes(url) ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ url, resolve })),
    async get(path, init) {
      const response = await app.handle(new Request(`http://localhost${path}`, init))
      const text = await response.text()
      let body: unknown
      try {
        body = text ? JSON.parse(text) : undefined
      } catch {
        body = undefined
      }
      return { status: response.status, headers: response.headers, text, body }
    },
    close: () => sql.end(),
  }
}
