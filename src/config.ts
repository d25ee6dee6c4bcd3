/**
 * The service's settings, read from the environment once at start and checked
 * there (NODE_ENV and VITRINE_WORKER included). No other code of ours reads
 * `process.env`, but libraries below us do: postgres.js fills in what
 * DATABASE_URL leaves out from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and
 * reads other PG… variables (PGSSL, …); Elysia reads NODE_ENV. And Bun loads
 * `.env` files into the environment before any of this runs. docs/configuration.md
 * lists them.
 */
import { statSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import { parseAddressRange, type AddressRange } from './quotas/addresses'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
/** What a filter callback's output that does not match its declared schema does (src/hooks/README.md). */
export type SchemaMismatchPolicy = 'fail' | 'log'

export interface Config {
  port: number
  host: string
  /** Unset: run an embedded PostgreSQL under `dataDir`. */
  databaseUrl: string | undefined
  databasePoolMax: number
  databaseTimeoutMs: number
  /** DATABASE_HEAVY_MAX: statements whose cost grows with the data that run at once per pool (C47). */
  databaseHeavyMax: number
  /** DATABASE_HEAVY_QUEUE: heavy statements that may wait for a place; more get a 503 at once (C47). */
  databaseHeavyQueue: number
  dataDir: string
  /** The service's own origin, without a trailing slash. */
  publicUrl: string
  /** Joined to storage-relative media paths (C15), without a trailing slash. */
  mediaBaseUrl: string
  /** `*` for any origin, otherwise the allowed origins. */
  corsOrigins: '*' | string[]
  logLevel: LogLevel
  hookTimeoutMs: number
  hookSchemaMismatch: SchemaMismatchPolicy
  /** Every `*.ts` file directly in it is an extension, loaded at start. */
  extensionsDir: string
  shutdownGraceMs: number
  /** CACHE: the in-process response cache (C35). */
  cache: boolean
  /** CACHE_MAX_MB, in bytes. */
  cacheMaxBytes: number
  /** CACHE_MAX_AGE: seconds of `max-age` for shared caches; 0 means `no-cache` (C33). */
  cacheMaxAge: number
  /** DATABASE_LISTEN_URL: where change notifications are heard; unset, the content database's URL. */
  databaseListenUrl: string | undefined
  /** DATABASE_READ_URLS: streaming replicas that serve content reads (C50); none by default. */
  databaseReadUrls: string[]
  /** REPLICA_MAX_LAG_MS: a replica further behind the last notified change leaves the rotation (C50). */
  replicaMaxLagMs: number
  /** LIVE_COUNT_CHECK_SECONDS: how often the kept live entry counts are compared with count(*) (C18); 0: at start only. */
  liveCountCheckSeconds: number
  /** SYNC_RETENTION_DAYS: how long a sync token stays good (C48); the change log keeps its rows as long (sql/change-log.md). */
  syncRetentionDays: number
  /** EVENTS_MAX_SUBSCRIBERS: event streams one process holds at once (C49); beyond it, 503. */
  eventsMaxSubscribers: number
  /** PURGE_URLS: the caches in front of the service, purged after every notified change (C51); none by default. */
  purgeTargets: PurgeTarget[]
  /** FASTLY_API_URL: the base URL of Fastly's API (tests point it at a local server). */
  fastlyApiUrl: string
  /** FASTLY_API_TOKEN: required with a `fastly://` target. */
  fastlyApiToken: string | undefined
  /** CLOUDFLARE_API_URL: the base URL of Cloudflare's API. */
  cloudflareApiUrl: string
  /** CLOUDFLARE_API_TOKEN: required with a `cloudflare://` target. */
  cloudflareApiToken: string | undefined
  /** METRICS_PORT (C53): where `GET /metrics` is served, never on PORT; undefined (the default): no metrics. 0 picks a free port. */
  metricsPort: number | undefined
  /** METRICS_HOST: the metrics listener's address; HOST by default. */
  metricsHost: string
  /** WORKERS: processes serving the port together. */
  workers: number
  /** Set by the supervisor in the processes it starts (src/workers.ts): serve with reusePort, prepare nothing. */
  isWorker: boolean
  /**
   * VITRINE_SPARE, set with VITRINE_WORKER by `bun run dev` in the process it keeps ready for the next
   * save (src/cli/dev.ts): its modules loaded, it waits for a line on stdin before it starts.
   */
  isSpare: boolean
  /**
   * Serve the demo's images under /media (src/demo/media): the service runs its
   * embedded database, which holds the demo content (no DATABASE_URL); a worker
   * hears it from its supervisor (VITRINE_DEMO_MEDIA). Never with a database of yours.
   */
  demoMedia: boolean
  /** RATE_LIMIT_REQUESTS: units per window each client's requests may spend (C52); 0, the default: no quota. */
  rateLimitRequests: number
  /** RATE_LIMIT_HEAVY: units per window each client's heavy statements may spend (C52, C47); 0, the default: no quota. */
  rateLimitHeavy: number
  /** RATE_LIMIT_WINDOW_S: the seconds in which a quota's units come back, all of them (C52). */
  rateLimitWindowS: number
  /** TRUSTED_PROXIES: the proxies whose X-Forwarded-For is believed (C52); none by default. */
  trustedProxies: AddressRange[]
  /** WEBHOOK_ALLOW_PRIVATE: webhooks may reach loopback, private, link-local and CGNAT addresses (C57); false by default. */
  webhookAllowPrivate: boolean
}

/**
 * A cache in front of the service (C51): `http(s)://` gets `PURGE` with an `xkey` header
 * (Varnish's vmod_xkey), `fastly://<service id>` and `cloudflare://<zone id>` their purge-by-key APIs.
 */
export type PurgeTarget = { kind: 'xkey'; url: string } | { kind: 'fastly'; service: string } | { kind: 'cloudflare'; zone: string }

/** A setting with a bad value; its message names the variable. */
export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent']

/**
 * Reads and checks every setting.
 * @example loadConfig({ PORT: '8080' }).port // 8080
 */
export function loadConfig(env: Env): Config {
  const port = readInteger(env, 'PORT', 3000, 0, 65535)
  const host = readHost(env, 'HOST', '0.0.0.0')
  const metricsPort = readText(env, 'METRICS_PORT') === undefined ? undefined : readInteger(env, 'METRICS_PORT', 0, 0, 65535)
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError(`METRICS_PORT must differ from PORT (${port}): the metrics are never served on the public port.`)
  }
  const publicUrl = trimSlash(readHttpUrl(env, 'PUBLIC_URL') ?? `http://localhost:${port}`)
  const databasePoolMax = readInteger(env, 'DATABASE_POOL_MAX', 10, 1, 1000)
  return {
    port,
    host,
    databaseUrl: readDatabaseUrl(env, 'DATABASE_URL'),
    databasePoolMax,
    databaseTimeoutMs: readInteger(env, 'DATABASE_TIMEOUT_MS', 5000, 100, 600_000),
    // One connection in eight, at least one: the rest stay for cheap statements (C47).
    databaseHeavyMax: readInteger(env, 'DATABASE_HEAVY_MAX', Math.max(1, Math.floor(databasePoolMax / 8)), 1, databasePoolMax),
    databaseHeavyQueue: readInteger(env, 'DATABASE_HEAVY_QUEUE', 32, 0, 100_000),
    dataDir: readText(env, 'DATA_DIR') ?? './.data',
    publicUrl,
    mediaBaseUrl: trimSlash(readHttpUrl(env, 'MEDIA_BASE_URL') ?? `${new URL(publicUrl).origin}/media`),
    corsOrigins: readCorsOrigins(env),
    logLevel: readChoice(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    hookTimeoutMs: readInteger(env, 'HOOK_TIMEOUT_MS', 1000, 1, 600_000),
    // Under `bun test` (NODE_ENV=test) a mismatch fails the request, and so the test.
    hookSchemaMismatch: readChoice(env, 'HOOK_SCHEMA_MISMATCH', ['fail', 'log'], env.NODE_ENV === 'test' ? 'fail' : 'log'),
    extensionsDir: readExtensionsDir(env),
    shutdownGraceMs: readInteger(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    cache: readSwitch(env, 'CACHE', true),
    webhookAllowPrivate: readSwitch(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    cacheMaxBytes: readInteger(env, 'CACHE_MAX_MB', 64, 1, 65_536) * 1024 * 1024,
    cacheMaxAge: readInteger(env, 'CACHE_MAX_AGE', 0, 0, 31_536_000),
    databaseListenUrl: readDatabaseUrl(env, 'DATABASE_LISTEN_URL'),
    databaseReadUrls: readDatabaseUrls(env, 'DATABASE_READ_URLS'),
    replicaMaxLagMs: readInteger(env, 'REPLICA_MAX_LAG_MS', 5000, 1, 3_600_000),
    liveCountCheckSeconds: readInteger(env, 'LIVE_COUNT_CHECK_SECONDS', 600, 0, 86_400),
    syncRetentionDays: readInteger(env, 'SYNC_RETENTION_DAYS', 30, 1, 3650),
    eventsMaxSubscribers: readInteger(env, 'EVENTS_MAX_SUBSCRIBERS', 10_000, 0, 1_000_000),
    ...readPurgeSettings(env),
    metricsPort,
    metricsHost: readHost(env, 'METRICS_HOST', host),
    workers: readInteger(env, 'WORKERS', 1, 1, 64),
    isWorker: env.VITRINE_WORKER === '1',
    isSpare: env.VITRINE_WORKER === '1' && env.VITRINE_SPARE === '1',
    demoMedia: env.VITRINE_WORKER === '1' ? env.VITRINE_DEMO_MEDIA === '1' : readText(env, 'DATABASE_URL') === undefined,
    rateLimitRequests: readInteger(env, 'RATE_LIMIT_REQUESTS', 0, 0, 1_000_000_000),
    rateLimitHeavy: readInteger(env, 'RATE_LIMIT_HEAVY', 0, 0, 1_000_000_000),
    rateLimitWindowS: readInteger(env, 'RATE_LIMIT_WINDOW_S', 60, 1, 86_400),
    trustedProxies: readAddressRanges(env, 'TRUSTED_PROXIES'),
  }
}

function readText(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value ? value : undefined
}

function readInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const text = readText(env, name)
  if (text === undefined) return fallback
  const value = /^\d+$/.test(text) ? Number(text) : NaN
  if (!(value >= min && value <= max)) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, not "${text}".`)
  }
  return value
}

/** A host name as RFC 1123 allows: dot-separated labels of letters, digits and inner hyphens. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i

function readHost(env: Env, name: string, fallback: string): string {
  const text = readText(env, name) ?? fallback
  if (isIP(text) || HOST_NAME.test(text)) return text
  throw new ConfigError(`${name} must be an IP address or a host name (0.0.0.0 for every interface, 127.0.0.1, ::, localhost), not "${text}".`)
}

/** The shipped folder may be absent (no extension); a folder named on purpose must exist, or its extensions would silently not apply. */
function readExtensionsDir(env: Env): string {
  const text = readText(env, 'EXTENSIONS_DIR')
  if (text === undefined) return join(import.meta.dir, 'hooks', 'extensions')
  if (!statSync(text, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ConfigError(`EXTENSIONS_DIR must be a folder that exists, not "${text}" (${resolve(text)}).`)
  }
  return text
}

function readHttpUrl(env: Env, name: string): string | undefined {
  const text = readText(env, name)
  if (text === undefined) return undefined
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
    throw new ConfigError(`${name} must be an absolute http(s) URL, not "${text}".`)
  }
  return text
}

function readDatabaseUrl(env: Env, name: string): string | undefined {
  const text = readText(env, name)
  if (text === undefined) return undefined
  if (!URL.canParse(text) || !/^postgres(ql)?:$/.test(new URL(text).protocol)) {
    // The URL may hold a password: never echo it.
    throw new ConfigError(`${name} must be a postgres:// or postgresql:// URL.`)
  }
  return text
}

/** A comma-separated list of postgres:// URLs; an empty list is none. */
function readDatabaseUrls(env: Env, name: string): string[] {
  const urls = (readText(env, name) ?? '').split(',').map((url) => url.trim()).filter(Boolean)
  urls.forEach((url, index) => {
    if (!URL.canParse(url) || !/^postgres(ql)?:$/.test(new URL(url).protocol)) {
      // A URL may hold a password: name its place in the list, never the text.
      throw new ConfigError(`${name} must be a comma-separated list of postgres:// or postgresql:// URLs; its URL number ${index + 1} is not one.`)
    }
  })
  return urls
}

/** A comma-separated list of addresses and CIDR ranges, IPv4 and IPv6; an empty list is none. */
function readAddressRanges(env: Env, name: string): AddressRange[] {
  const entries = (readText(env, name) ?? '').split(',').map((entry) => entry.trim()).filter(Boolean)
  return entries.map((entry) => {
    const range = parseAddressRange(entry)
    if (range === null) throw new ConfigError(`${name} must be a comma-separated list of IP addresses and CIDR ranges (10.0.0.0/8, 2001:db8::/32), not "${entry}".`)
    return range
  })
}

/** PURGE_URLS and what its targets need: a CDN target without its token would fail every purge, so it stops the start. */
function readPurgeSettings(env: Env): Pick<Config, 'purgeTargets' | 'fastlyApiUrl' | 'fastlyApiToken' | 'cloudflareApiUrl' | 'cloudflareApiToken'> {
  const purgeTargets = (readText(env, 'PURGE_URLS') ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean)
    .map(readPurgeTarget)
  const fastlyApiToken = readText(env, 'FASTLY_API_TOKEN')
  const cloudflareApiToken = readText(env, 'CLOUDFLARE_API_TOKEN')
  if (purgeTargets.some((target) => target.kind === 'fastly') && fastlyApiToken === undefined) {
    throw new ConfigError('FASTLY_API_TOKEN must be set: PURGE_URLS names a fastly:// service.')
  }
  if (purgeTargets.some((target) => target.kind === 'cloudflare') && cloudflareApiToken === undefined) {
    throw new ConfigError('CLOUDFLARE_API_TOKEN must be set: PURGE_URLS names a cloudflare:// zone.')
  }
  return {
    purgeTargets,
    fastlyApiUrl: trimSlash(readHttpUrl(env, 'FASTLY_API_URL') ?? 'https://api.fastly.com'),
    fastlyApiToken,
    cloudflareApiUrl: trimSlash(readHttpUrl(env, 'CLOUDFLARE_API_URL') ?? 'https://api.cloudflare.com'),
    cloudflareApiToken,
  }
}

function readPurgeTarget(text: string): PurgeTarget {
  const wrong = () => new ConfigError(`PURGE_URLS must be a comma-separated list of http(s)://host/path, fastly://<service id> or cloudflare://<zone id> URLs, not "${text}".`)
  if (!URL.canParse(text)) throw wrong()
  const url = new URL(text)
  if (/^https?:$/.test(url.protocol) && url.username === '' && url.password === '') return { kind: 'xkey', url: url.href }
  // The id is the whole rest: `fastly://SU1Z0isxPaozGVKXdv0eY`.
  const id = text.slice(url.protocol.length + 2)
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw wrong()
  if (url.protocol === 'fastly:') return { kind: 'fastly', service: id }
  if (url.protocol === 'cloudflare:') return { kind: 'cloudflare', zone: id }
  throw wrong()
}

function readSwitch(env: Env, name: string, fallback: boolean): boolean {
  const text = readText(env, name)
  if (text === undefined) return fallback
  // C57 writes WEBHOOK_ALLOW_PRIVATE=true: every switch takes true and false too.
  if (text === 'on' || text === 'true') return true
  if (text === 'off' || text === 'false') return false
  throw new ConfigError(`${name} must be "on" or "off" ("true" or "false"), not "${text}".`)
}

function readCorsOrigins(env: Env): '*' | string[] {
  const text = readText(env, 'CORS_ORIGINS')
  if (text === undefined || text === '*') return '*'
  const origins = text.split(',').map((origin) => origin.trim()).filter(Boolean)
  for (const origin of origins) {
    if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS must be "*" or a comma-separated list of origins such as https://example.com, not "${origin}".`)
    }
  }
  return origins
}

function readChoice<Choice extends string>(env: Env, name: string, choices: readonly Choice[], fallback: Choice): Choice {
  const text = readText(env, name) ?? fallback
  if (!(choices as readonly string[]).includes(text)) {
    throw new ConfigError(`${name} must be one of ${choices.join(', ')}, not "${text}".`)
  }
  return text as Choice
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '')
}
