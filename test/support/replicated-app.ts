import { createApp } from '../../src/app'
import type { PreparedAnswer, SlotAnswer } from '../../src/cache/answer-slot'
import { listenForChanges, type Change, type ChangeHandlers } from '../../src/cache/change-listener'
import { ContentCache } from '../../src/cache/content-cache'
import { loadConfig, type Config } from '../../src/config'
import { openReadPool, type Sql } from '../../src/db/connect'
import { everyHandler } from '../../src/cache/change-listener'
import { openReadReplicas, type ReadReplicas } from '../../src/db/replicas'
import { createLogger } from '../../src/log'
import type { TestResponse } from './app'

export interface ReplicatedTestApp {
  app: ReturnType<typeof createApp>
  config: Config
  replicas: ReadReplicas
  cache: ContentCache<SlotAnswer, PreparedAnswer> | undefined
  /** Statements sent to the primary's read pool, and to each replica (by name), in order. */
  primaryStatements: string[]
  replicaStatements: Map<string, string[]>
  logs: string[]
  /** Resolves once the listener has heard a change of `table` (from now on), the cache and the positions told first. */
  nextChange(table: string): Promise<Change>
  get(path: string): Promise<TestResponse>
  close(): Promise<void>
}

/**
 * The app as `bun run start` wires it with DATABASE_READ_URLS (C50): the
 * primary's read pool, a pool per replica, the change listener telling the
 * cache (unless `cache: false`) and the notified positions.
 * @example const api = await replicatedTestApp(db.url, [standby.url(db.name)])
 */
export async function replicatedTestApp(databaseUrl: string, replicaUrls: string[], { cache: withCache = true, env = {} }: { cache?: boolean; env?: Record<string, string> } = {}): Promise<ReplicatedTestApp> {
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: databaseUrl, DATABASE_READ_URLS: replicaUrls.join(','), PUBLIC_URL: 'https://cms.example.com', LOG_LEVEL: 'info', DATABASE_POOL_MAX: '4', ...env })
  const logs: string[] = []
  const log = createLogger(config.logLevel, (line) => logs.push(line))
  const primaryStatements: string[] = []
  const replicaStatements = new Map<string, string[]>()
  const sql: Sql = openReadPool(databaseUrl, config, (query) => primaryStatements.push(query))
  const replicas = openReadReplicas(sql, config, log, (name, query) => {
    replicaStatements.set(name, [...(replicaStatements.get(name) ?? []), query])
  })!
  const cache = withCache ? new ContentCache<SlotAnswer, PreparedAnswer>(config.cacheMaxBytes) : undefined
  const heard: ChangeHandlers[] = cache ? [cache, replicas.positions] : [replicas.positions]
  let listening!: () => void
  const listened = new Promise<void>((resolve) => (listening = resolve))
  const waiting: { table: string; resolve: (change: Change) => void }[] = []
  const heardByTest: ChangeHandlers = {
    onListening: () => listening(),
    onLost: () => {},
    onChange: (change) => {
      for (const waiter of waiting.filter((candidate) => candidate.table === change.table)) {
        waiting.splice(waiting.indexOf(waiter), 1)
        waiter.resolve(change)
      }
    },
    onLanguages: () => {},
  }
  const listener = listenForChanges(databaseUrl, everyHandler([...heard, heardByTest], log), {
    timeoutMs: 5000,
    heartbeatMs: 200,
    log,
  })
  await listened
  await replicas.start()
  const app = createApp({ sql, config, log, cache, replicas })
  return {
    app,
    config,
    replicas,
    cache,
    primaryStatements,
    replicaStatements,
    logs,
    nextChange: (table) => new Promise((resolve) => waiting.push({ table, resolve })),
    async get(path) {
      const response = await app.handle(new Request(`http://localhost${path}`))
      const text = await response.text()
      return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined }
    },
    async close() {
      await listener.stop()
      await replicas.stop()
      await sql.end()
    },
  }
}
