import { isIPv6 } from 'node:net'
import { createApp } from './app'
import { everyHandler, listenForChanges, type ChangeHandlers, type ChangeListener } from './cache/change-listener'
import { EventFeed } from './changes/event-feed'
import { ContentCache } from './cache/content-cache'
import { goLivesFor } from './cache/next-go-lives'
import { startEdgePurge } from './edge/edge-purger'
import { startWebhookDelivery } from './webhooks/webhook-delivery'
import type { PreparedAnswer, SlotAnswer } from './cache/answer-slot'
import { LiveCountCheck } from './content/live-count-check'
import { KeptDriftCheck } from './content/kept-drift-check'
import { runCommand } from './cli/run'
import { loadConfig } from './config'
import { openReadPool } from './db/connect'
import { prepareDatabase } from './db/prepare'
import { openReadReplicas, type ReadReplicas } from './db/replicas'
import { resolveDatabase } from './db/open'
import { loadExtensions } from './hooks/loader'
import { listen, listenForMetrics } from './http/listen'
import { peerAddress } from './http/serve'
import { recordChangeListener, recordMetrics, registry, watchCacheBytes, watchEventSubscribers, watchPurgePendingKeys } from './metrics/families'
import { answerScrapes } from './metrics/worker-scrapes'
import { createLogger, type Logger } from './log'
import { startSignal, superviseWorkers } from './workers'

runCommand(async (onFailure) => {
  const settings = loadConfig(process.env)
  // `bun run dev` keeps a process ready, its modules loaded, and starts it when an extension is saved.
  if (settings.isSpare && !(await startSignal())) process.exit(0)
  const log = createLogger(settings.logLevel)
  // Extensions first: one that fails to load stops the start before anything else is set up.
  const { registry: filters, files } = await loadExtensions(settings.extensionsDir)
  if (files.length) log.info('loaded extensions', { files })

  // A fault before the service serves stops the embedded PostgreSQL, even one thrown outside this function,
  // from the moment it starts.
  const target = await resolveDatabase(settings, log, onFailure)
  // Read-only: neither a bug nor an extension can write through it.
  const sql = openReadPool(target.url, settings)

  let listener: ChangeListener | undefined
  let events: EventFeed | undefined
  let replicas: ReadReplicas | undefined
  let liveCounts: LiveCountCheck | undefined
  let keptDrift: KeptDriftCheck | undefined
  let edge: ReturnType<typeof startEdgePurge> | undefined
  let webhooks: ReturnType<typeof startWebhookDelivery> | undefined
  let listening: ReturnType<typeof listen>
  let metrics: ReturnType<typeof listenForMetrics>
  try {
    await prepareDatabase(sql, target, settings.databaseTimeoutMs, log)
    if (settings.workers > 1 && !settings.isWorker) {
      // WORKERS=n: this process supervises; each worker has its own pool, cache and change listener.
      await sql.end()
      await superviseWorkers(settings, log, target)
      return logFaultsFromNowOn(log)
    }
    // C35/C36: answers from memory while the database's change notifications are heard.
    const cache = settings.cache ? new ContentCache<SlotAnswer, PreparedAnswer>(settings.cacheMaxBytes) : undefined
    // C53: recorded only with METRICS_PORT; a worker's are scraped through its supervisor.
    recordMetrics(settings.metricsPort !== undefined)
    recordChangeListener(false)
    if (cache) watchCacheBytes(() => cache.stats.bytes)
    // C50: replicas serve content reads only past the notified changes, so their positions hear the listener, cache or not.
    replicas = openReadReplicas(sql, settings, log)
    // C49: the event stream is fed by the same notifications, read from the change log (on the primary).
    events = new EventFeed({ sql, log, timeoutMs: settings.databaseTimeoutMs, maxSubscribers: settings.eventsMaxSubscribers, retentionDays: settings.syncRetentionDays })
    watchEventSubscribers(() => events?.subscribers ?? 0)
    // C51: the caches in front of the service are purged by one instance per database (each worker bids for the duty).
    const primaryUrl = settings.databaseListenUrl ?? target.url
    if (settings.purgeTargets.length > 0) edge = startEdgePurge({ sql, primaryUrl, settings, log })
    if (edge) watchPurgePendingKeys(() => edge?.purger.pendingKeys ?? 0)
    // C57: webhooks are delivered by one instance per database too, from its own read-write connection.
    webhooks = startWebhookDelivery({ primaryUrl, settings, log })
    // C36: a type's next go-live is read again only after a write to it, or once it has come (with CACHE_MAX_AGE 0).
    const goLives = goLivesFor(settings)
    const heard = [cache, goLives, replicas?.positions, events, edge?.purger, webhooks.delivery, listenerMetric].filter((handlers) => handlers !== undefined)
    listener = listenForChanges(primaryUrl, everyHandler(heard, log), { timeoutMs: settings.databaseTimeoutMs, log })
    await replicas?.start()
    // C18: a type whose kept count drifted is counted one by one; its cached answers go.
    liveCounts = new LiveCountCheck(sql, log, (typeIds) => cache?.onChange({ table: 'live_entry_count_deltas', typeIds: new Set(typeIds) }))
    liveCounts.start(settings.liveCountCheckSeconds * 1000)
    // C56: every other kept structure, reported; answers check C1 on each entry's own row whatever it holds.
    keptDrift = new KeptDriftCheck(sql, log)
    keptDrift.start(settings.liveCountCheckSeconds * 1000)
    // C53: a worker's metrics are scraped through its supervisor, which holds METRICS_PORT.
    if (settings.isWorker && settings.metricsPort !== undefined) answerScrapes(() => registry.snapshot())
    metrics = settings.isWorker ? undefined : listenForMetrics(settings, log, () => registry.snapshot())
    listening = listen(settings, process.env, log, (config, server) => createApp({ sql, config, log, filters, cache, goLives, liveCounts, events, replicas, peerAddress: (request) => peerAddress(server, request), closeConnection: (request) => server.timeout(request, 1) }))
  } catch (error) {
    // Nothing will serve: leave no pool, no listener and no embedded PostgreSQL behind.
    events?.close()
    void metrics?.stop(true)
    liveCounts?.stop()
    keptDrift?.stop()
    await edge?.stop()
    await webhooks?.stop()
    await listener?.stop()
    await replicas?.stop()
    await sql.end({ timeout: 1 })
    await target.embedded?.stop()
    throw error
  }
  const { server, config } = listening
  logFaultsFromNowOn(log)
  const url = localUrl(config.host, config.port)
  log.info(`Vitrine is serving ${url}/api/v1/content/post`, { url, publicUrl: config.publicUrl, embedded: Boolean(target.embedded), database: withoutPassword(target.url), ...(target.embedded ? { psql: 'bun run psql' } : {}) })

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
    // Event streams never finish by themselves: they end now, and their clients reconnect elsewhere.
    events?.close()
    void metrics?.stop(true)
    const drained = await Promise.race([server.stop(false).then(() => true), Bun.sleep(config.shutdownGraceMs).then(() => false)])
    if (!drained) {
      log.warn('grace period over: closing the remaining connections')
      await server.stop(true)
    }
    liveCounts?.stop()
    keptDrift?.stop()
    // The purge duty goes first: another instance takes it over (and purges everything) while this one stops.
    await edge?.stop()
    await webhooks?.stop()
    await listener?.stop()
    await replicas?.stop()
    await sql.end({ timeout: 5 })
    await target.embedded?.stop()
    log.info('stopped', { ms: Math.round(performance.now() - started) })
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
}, { stopOnSignals: ['SIGTERM', 'SIGINT'] })

/** C53: vitrine_change_listener_up hears the listener as the cache does. */
const listenerMetric: ChangeHandlers = {
  onListening: () => recordChangeListener(true),
  onLost: () => recordChangeListener(false),
  onChange: () => {},
  onLanguages: () => {},
}

/**
 * Once serving, code of an extension that forgets a promise, or a fault deep in a library, must not bring the
 * service down: it is logged. Until then such a fault fails the start in one line (runCommand).
 */
function logFaultsFromNowOn(log: Logger): void {
  process.on('unhandledRejection', (error) => log.error('unhandled rejection', { error }))
  process.on('uncaughtException', (error) => log.error('uncaught exception', { error }))
}

/**
 * A database URL as the log may show it: without its password.
 * @example withoutPassword('postgres://postgres:secret@127.0.0.1:5432/postgres') // 'postgres://postgres@127.0.0.1:5432/postgres'
 */
export function withoutPassword(text: string): string {
  try {
    const url = new URL(text)
    url.password = ''
    return url.toString()
  } catch {
    return '(not a URL)'
  }
}

/** Where a person on this machine reaches the service. */
function localUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : isIPv6(host) ? `[${host}]` : host
  return `http://${name}:${port}`
}
