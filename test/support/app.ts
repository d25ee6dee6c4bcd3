import { createApp } from '../../src/app'
import type { ContentCache } from '../../src/cache/content-cache'
import type { ContentAnswer } from '../../src/content/content-answer'
import { loadConfig, type Config } from '../../src/config'
import { openReadPool, type Sql } from '../../src/db/connect'
import { FilterRegistry } from '../../src/hooks/registry'
import { createLogger, type Logger } from '../../src/log'

export interface TestApp {
  app: ReturnType<typeof createApp>
  sql: Sql
  config: Config
  /** Statements sent since the last `resetStatements()`. */
  statements: string[]
  logs: string[]
  get(path: string, init?: RequestInit): Promise<TestResponse>
  close(): Promise<void>
}

export interface TestResponse {
  status: number
  headers: Headers
  text: string
  body: any
}

/**
 * The app over a test database, called in process through `app.handle`.
 * @example const api = testApp(db.url, { MEDIA_BASE_URL: 'https://cdn.example.com' })
 */
export function testApp(databaseUrl: string, env: Record<string, string> = {}, filters = new FilterRegistry(), cache?: ContentCache<ContentAnswer>): TestApp {
  // NODE_ENV test, as under `bun test`: an extension's output that does not match its declared schema fails the request.
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: databaseUrl, PUBLIC_URL: 'https://cms.example.com', LOG_LEVEL: 'debug', ...env })
  const statements: string[] = []
  const logs: string[] = []
  // The service's own pool settings (read-only, statement_timeout), with a smaller pool.
  const sql = openReadPool(databaseUrl, { ...config, databasePoolMax: 4 }, (query) => statements.push(query))
  const log: Logger = createLogger(config.logLevel, (line) => logs.push(line))
  const app = createApp({ sql, config, log, filters, cache })
  return {
    app,
    sql,
    config,
    statements,
    logs,
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
