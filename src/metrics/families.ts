/**
 * Every metric the service exposes (C53), and the small named functions the
 * other rooms record through: a room never touches a family, nor formats
 * text. Label values come from bounded sets only: a route's template, never
 * its path; a statement's lane, a replica's index, a callback's file and
 * name; never a slug, a query, a header or an address.
 */
import { Registry, type Cell, type HistogramSeries, observeInto } from './registry'

/** OpenTelemetry's buckets for http.server.request.duration, in seconds. */
export const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10] as const
/** Statements and filter callbacks take less than requests: finer at the low end. */
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const

/** The http_route of a request no route answers: never its path. */
export const OTHER_ROUTE = 'other'

export const registry = new Registry()

const requestDuration = registry.histogram({
  name: 'http_server_request_duration_seconds',
  help: 'Time from a request reaching the service to its response being ready, by method, route template and status.',
  labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
  bounds: REQUEST_BUCKETS,
})
const cacheRequests = registry.counter({ name: 'vitrine_cache_requests_total', help: 'Answers asked of the response cache: hit, miss (loaded and kept) or bypass (not cacheable now).', labelNames: ['result'] })
const cacheBytes = registry.gauge({ name: 'vitrine_cache_bytes', help: 'Bytes the response cache holds (CACHE_MAX_MB bounds it).' })
const cacheEvictions = registry.counter({ name: 'vitrine_cache_evictions_total', help: 'Answers the response cache let go to stay within CACHE_MAX_MB.' })
const statementDuration = registry.histogram({
  name: 'vitrine_db_statement_duration_seconds',
  help: 'Time of each database statement, by statement (its lane: heavy or cheap, C47) and server (primary or replica-<index>).',
  labelNames: ['statement', 'server'],
  bounds: FAST_BUCKETS,
})
const heavyLaneWaiting = registry.gauge({ name: 'vitrine_heavy_lane_waiting', help: 'Heavy statements waiting for a place in their pool\'s heavy lane (C47).' })
const heavyLaneRefused = registry.counter({ name: 'vitrine_heavy_lane_refused_total', help: 'Heavy statements refused (503) because the lane\'s line was full or their deadline passed in it (C47).' })
const changeListenerUp = registry.gauge({ name: 'vitrine_change_listener_up', help: '1 while the database\'s change notifications are heard (C36), in every worker; 0 otherwise.', merge: 'min' })
const eventSubscribers = registry.gauge({ name: 'vitrine_event_subscribers', help: 'Open event streams (C49).' })
const hookDuration = registry.histogram({
  name: 'vitrine_hook_duration_seconds',
  help: 'Time of each filter callback per item, by callback (its extension file and name).',
  labelNames: ['callback'],
  bounds: FAST_BUCKETS,
})
const purgeRequests = registry.counter({ name: 'vitrine_purge_requests_total', help: 'Purge requests sent to the caches in front (C51), by target and outcome.', labelNames: ['target', 'outcome'] })
const purgePendingKeys = registry.gauge({ name: 'vitrine_purge_pending_keys', help: 'Surrogate keys waiting to be purged (C51).' })
const rateLimited = registry.counter({ name: 'vitrine_rate_limited_total', help: 'Requests answered 429 by a quota (C52), by policy.', labelNames: ['policy'] })
const replicaLag = registry.gauge({ name: 'vitrine_replica_lag_seconds', help: 'How far a replica is behind the last notified change, at its last check (C50).', labelNames: ['replica'], merge: 'max' })
const replicaInRotation = registry.gauge({ name: 'vitrine_replica_in_rotation', help: '1 while a replica serves reads (C50); its label is its index in DATABASE_READ_URLS.', labelNames: ['replica'], merge: 'min' })
const keptDrift = registry.gauge({ name: 'vitrine_kept_drift', help: 'Rows of a structure the service keeps beside the data model that disagree with the base tables, at its last check (C56; 0: exact). Per structure: triggers, live_entry_counts, filter_counts, term_lists, entry_guards, search_documents, search_postings, search_prefixes.', labelNames: ['structure'], merge: 'max' })
const webhookDeliveries = registry.counter({ name: 'vitrine_webhook_deliveries_total', help: 'Attempts to deliver webhook messages (C57), by webhook (its row\'s id) and outcome: delivered, failed (retried), gone (410: disabled), given_up (24 h after the first attempt).', labelNames: ['webhook', 'outcome'] })
const webhookPending = registry.gauge({ name: 'vitrine_webhook_pending_messages', help: 'Webhook messages stored and not yet delivered (C57), by webhook, in the instance that delivers.', labelNames: ['webhook'], merge: 'max' })
const webhookOldest = registry.gauge({ name: 'vitrine_webhook_oldest_pending_seconds', help: 'Age of the oldest webhook message not yet delivered (C57), by webhook, in the instance that delivers.', labelNames: ['webhook'], merge: 'max' })
const residentMemory = registry.gauge({ name: 'process_resident_memory_bytes', help: 'Resident memory of the service\'s processes, in bytes.' })
const cpuSeconds = registry.counter({ name: 'process_cpu_seconds_total', help: 'CPU time of the service\'s processes, user and system, in seconds.' })
const startTime = registry.gauge({ name: 'process_start_time_seconds', help: 'Start of the service\'s oldest process, in seconds since the Unix epoch.', merge: 'min' })

const processStartedAt = (Date.now() - performance.now()) / 1000
residentMemory.beforeSnapshot = () => residentMemory.set(undefined, process.memoryUsage.rss())
cpuSeconds.beforeSnapshot = () => {
  const { user, system } = process.cpuUsage()
  cpuSeconds.series().value = (user + system) / 1e6
}
startTime.beforeSnapshot = () => startTime.set(undefined, processStartedAt)

/** Series that exist from the start, at 0, so that rate() and ratios see them before the first event. */
function createInitialSeries(): void {
  for (const result of ['hit', 'miss', 'bypass']) cacheRequests.series([result])
  cacheEvictions.series()
  heavyLaneWaiting.series()
  heavyLaneRefused.series()
}
createInitialSeries()

let recording = false

/**
 * Whether the service records metrics: on when METRICS_PORT is set (main.ts),
 * off otherwise, when every record function returns at once.
 */
export function recordMetrics(on: boolean): void {
  recording = on
}

/** Forgets every value recorded (tests). */
export function resetMetrics(): void {
  registry.reset()
  requestCells.clear()
  cacheRequestCells.clear()
  createInitialSeries()
}

/**
 * One request answered: its method, its route's template (`/api/v1/content/{type}`, OTHER_ROUTE when none), status and time.
 * @example recordRequest('GET', '/api/v1/content/{type}', 200, 0.0012)
 */
export function recordRequest(method: string, route: string, status: number, seconds: number): void {
  if (!recording) return
  observeInto(requestSeries(method, route, status), REQUEST_BUCKETS, seconds)
}

/** The series per method, route and status, found without building a key string on the hit path. */
const requestCells = new Map<string, Map<string, Map<number, HistogramSeries>>>()
function requestSeries(method: string, route: string, status: number): HistogramSeries {
  let byRoute = requestCells.get(method)
  if (!byRoute) requestCells.set(method, (byRoute = new Map()))
  let byStatus = byRoute.get(route)
  if (!byStatus) byRoute.set(route, (byStatus = new Map()))
  let series = byStatus.get(status)
  if (!series) byStatus.set(status, (series = requestDuration.series([method, route, String(status)])))
  return series
}

const cacheRequestCells = new Map<string, Cell>()
/**
 * @example recordCacheRequest('hit')
 */
export function recordCacheRequest(result: 'hit' | 'miss' | 'bypass'): void {
  if (!recording) return
  let cell = cacheRequestCells.get(result)
  if (!cell) cacheRequestCells.set(result, (cell = cacheRequests.series([result])))
  cell.value++
}

/** An answer let go to make room. */
export function recordCacheEviction(): void {
  if (recording) cacheEvictions.inc()
}

/**
 * The cache's size is read when scraped.
 * @example watchCacheBytes(() => cache.stats.bytes)
 */
export function watchCacheBytes(read: () => number): void {
  cacheBytes.beforeSnapshot = () => cacheBytes.set(undefined, read())
}

/**
 * One database statement ended (or failed): its lane and server.
 * @example recordStatement('cheap', 'primary', 0.0008)
 */
export function recordStatement(statement: string, server: string, seconds: number): void {
  if (recording) statementDuration.observe([statement, server], seconds)
}

/** A heavy statement began (+1) or stopped (-1) waiting in a lane's line. */
export function recordHeavyLaneWaiting(change: 1 | -1): void {
  if (recording) heavyLaneWaiting.add(undefined, change)
}

/** A heavy statement was refused a place (503 busy). */
export function recordHeavyLaneRefused(): void {
  if (recording) heavyLaneRefused.inc()
}

/** The change listener is listening, or lost. */
export function recordChangeListener(up: boolean): void {
  if (recording) changeListenerUp.set(undefined, up ? 1 : 0)
}

/**
 * The number of open event streams is read when scraped.
 * @example watchEventSubscribers(() => events.subscribers)
 */
export function watchEventSubscribers(read: () => number): void {
  eventSubscribers.beforeSnapshot = () => eventSubscribers.set(undefined, read())
}

/**
 * One filter callback ran over one item; `callback` is its file and name (`src/hooks/extensions/20-x.ts:hideDrafts`).
 * @example recordHook('extensions/20-x.ts:hideDrafts', 0.0001)
 */
export function recordHook(callback: string, seconds: number): void {
  if (recording) hookDuration.observe([callback], seconds)
}

/**
 * One purge request to a cache in front (C51): `target` is its kind and its place in PURGE_URLS, never its URL;
 * `failed` requests are retried until one is `ok`.
 * @example recordPurgeRequest('xkey-0', 'ok')
 */
export function recordPurgeRequest(target: string, outcome: 'ok' | 'failed'): void {
  if (recording) purgeRequests.inc([target, outcome])
}

/**
 * Surrogate keys waiting to be purged (C51), read when scraped.
 * @example watchPurgePendingKeys(() => purger.pendingKeys)
 */
export function watchPurgePendingKeys(read: () => number): void {
  purgePendingKeys.beforeSnapshot = () => purgePendingKeys.set(undefined, read())
}

/**
 * A request answered 429 by a quota (C52).
 * @example recordRateLimited('requests')
 */
export function recordRateLimited(policy: 'requests' | 'heavy'): void {
  if (recording) rateLimited.inc([policy])
}

/**
 * A replica's check (C50): its index in DATABASE_READ_URLS, its lag and whether it serves.
 * @example recordReplica(0, 0.02, true)
 */
export function recordReplica(index: number, lagSeconds: number | null, inRotation: boolean): void {
  if (!recording) return
  if (lagSeconds !== null) replicaLag.set([String(index)], lagSeconds)
  replicaInRotation.set([String(index)], inRotation ? 1 : 0)
}

/**
 * A check of a kept structure (C56): the rows that disagree with the base tables, 0 when it agrees.
 * @example recordKeptDrift('search_postings', 0)
 */
export function recordKeptDrift(structure: string, rows: number): void {
  if (recording) keptDrift.set([structure], rows)
}

/**
 * One attempt at a webhook message (C57); `webhook` is the row's id, never its URL.
 * @example recordWebhookDelivery(3, 'delivered')
 */
export function recordWebhookDelivery(webhook: number, outcome: 'delivered' | 'failed' | 'gone' | 'given_up'): void {
  if (recording) webhookDeliveries.inc([String(webhook), outcome])
}

/** One endpoint's queue of undelivered messages, as the delivering instance last read it (every 5 s at least). */
export interface WebhookQueue {
  webhook: string
  pending: number
  /** When its oldest message was stored, in milliseconds since 1970. */
  oldest_ms: number
}

/**
 * The webhook queues (C57), read when scraped: only endpoints with messages pending have series.
 * @example watchWebhookQueues(() => delivery.queues)
 */
export function watchWebhookQueues(read: () => readonly WebhookQueue[]): void {
  webhookPending.beforeSnapshot = () => {
    webhookPending.reset()
    for (const queue of read()) webhookPending.set([queue.webhook], queue.pending)
  }
  webhookOldest.beforeSnapshot = () => {
    webhookOldest.reset()
    for (const queue of read()) webhookOldest.set([queue.webhook], Math.max(0, (Date.now() - queue.oldest_ms) / 1000))
  }
}
