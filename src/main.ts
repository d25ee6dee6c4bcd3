import { createApp } from './app'
import { listenForChanges } from './cache/change-listener'
import { ContentCache } from './cache/content-cache'
import type { ContentAnswer } from './content/content-answer'
import { runCommand } from './cli/run'
import { loadConfig } from './config'
import { connectDatabase, openReadPool } from './db/connect'
import { migrate, pendingMigrations } from './db/migrate'
import { resolveDatabase } from './db/open'
import { seedDemo } from './demo/seed-demo'
import { loadExtensions } from './hooks/loader'
import { serveApp } from './http/serve'
import { createLogger } from './log'
import { superviseWorkers } from './workers'

runCommand(async () => {
  const config = loadConfig(process.env)
  const log = createLogger(config.logLevel)
  // Extensions first: one that fails to load stops the start before anything else is set up.
  const { registry: filters, files } = await loadExtensions(config.extensionsDir)
  if (files.length) log.info('loaded extensions', { files })
  // Code of an extension that forgets a promise, or a fault deep in a library, must not bring the service down.
  process.on('unhandledRejection', (error) => log.error('unhandled rejection', { error }))
  process.on('uncaughtException', (error) => log.error('uncaught exception', { error }))

  const target = await resolveDatabase(config, log)
  // Read-only: neither a bug nor an extension can write through it.
  const sql = openReadPool(target.url, config)

  if (target.embedded) {
    // The embedded database is this process's own: keep it migrated, and give
    // a new user something to look at on the very first run. Writes go through
    // a connection of their own.
    const admin = connectDatabase(target.url, { max: 1, timeoutMs: config.databaseTimeoutMs })
    const applied = await migrate(admin)
    if (applied.length) log.info('migrated the embedded database', { applied })
    if (target.embedded.created) {
      const { entries } = await seedDemo(admin)
      log.info('loaded the demo content', { entries })
    }
    await admin.end()
  } else {
    const pending = await pendingMigrations(sql).catch(() => [])
    if (pending.length) log.warn('the database has pending migrations: run `bun run migrate`', { pending })
  }

  if (config.workers > 1 && !config.isWorker) {
    await sql.end()
    return superviseWorkers(config, log, target)
  }

  // C35/C36: answers from memory while the database's change notifications are heard.
  const cache = config.cache ? new ContentCache<ContentAnswer>(config.cacheMaxBytes) : undefined
  const listener = cache && listenForChanges(config.databaseListenUrl ?? target.url, cache, { timeoutMs: config.databaseTimeoutMs, log })

  // Only the workers of WORKERS=n share the port; otherwise a port in use fails the start.
  const server = serveApp(createApp({ sql, config, log, filters, cache }), {
    port: config.port,
    hostname: config.host,
    reusePort: config.isWorker,
    requestBudgetMs: config.databaseTimeoutMs + config.hookTimeoutMs,
    log,
  })
  const url = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${server.port}`
  log.info(`Vitrine is serving ${url}/api/v1/content/post`, { url, embedded: Boolean(target.embedded) })

  // Graceful stop: refuse new connections, let requests in flight finish (up to
  // SHUTDOWN_GRACE_MS), then close the pool and the embedded database. A second
  // signal closes the remaining connections at once.
  let stopping: string | undefined
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A worker gets Ctrl-C's SIGINT and its supervisor's SIGTERM: only the same signal twice means "now".
      if (signal !== stopping) return
      log.warn('second signal: closing the remaining connections', { signal })
      void server.stop(true)
      return
    }
    stopping = signal
    const started = performance.now()
    log.info('shutting down: finishing requests in flight', { signal, graceMs: config.shutdownGraceMs })
    const drained = await Promise.race([server.stop(false).then(() => true), Bun.sleep(config.shutdownGraceMs).then(() => false)])
    if (!drained) {
      log.warn('grace period over: closing the remaining connections')
      await server.stop(true)
    }
    await listener?.stop()
    await sql.end({ timeout: 5 })
    await target.embedded?.stop()
    log.info('stopped', { ms: Math.round(performance.now() - started) })
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
})
