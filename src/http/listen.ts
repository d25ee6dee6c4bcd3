import { loadConfig, ConfigError, type Config } from '../config'
import type { Logger } from '../log'
import { serveMetrics } from '../metrics/listener'
import type { FamilySnapshot } from '../metrics/registry'
import { PortInUseError, serveApp, type Fetchable } from './serve'

export interface Listening {
  server: ReturnType<typeof serveApp>
  /** The settings with the port actually bound as `port`: PORT=0 has picked a free one. */
  config: Config
}

/**
 * Binds HOST and PORT (serveApp; the workers of WORKERS=n share the port), then
 * builds the app with the settings of the port actually bound (with PORT=0, the
 * defaults of PUBLIC_URL and MEDIA_BASE_URL must name the port picked, not 0),
 * before the first request can arrive (the app gets the server: it closes a
 * connection it gives up on, C49). A port in use, or a HOST that cannot be
 * bound, stops the start with one line naming it.
 * @example const { server, config } = listen(loadConfig(process.env), process.env, log, (settled) => createApp({ ...deps, config: settled }))
 */
export function listen(config: Config, env: Record<string, string | undefined>, log: Logger, build: (config: Config, server: Listening['server']) => Fetchable): Listening {
  let app: Fetchable | undefined
  let server: Listening['server']
  try {
    // The app is set below, in this same turn of the event loop: no request comes before it.
    server = serveApp(
      { fetch: (request) => app!.fetch(request) },
      { port: config.port, hostname: config.host, reusePort: config.isWorker, requestBudgetMs: config.databaseTimeoutMs + config.hookTimeoutMs, log },
    )
  } catch (error) {
    throw error instanceof PortInUseError ? error : new ConfigError(bindFailure(error, config))
  }
  try {
    const settled = server.port === config.port ? config : loadConfig({ ...env, PORT: String(server.port) })
    app = build(settled, server)
    return { server, config: settled }
  } catch (error) {
    server.stop(true)
    throw error
  }
}

function bindFailure(error: unknown, { host, port }: Config): string {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'EADDRNOTAVAIL') return `HOST ${host} is not an address of this machine: use one of its addresses, or 0.0.0.0 for all of them.`
  if (code === 'ENOTFOUND') return `HOST ${host} does not resolve to an address of this machine.`
  if (code === 'EACCES') return `PORT ${port} needs privileges this process lacks: choose a PORT above 1023.`
  return `Cannot listen on HOST ${host}, PORT ${port}: ${error instanceof Error ? error.message : String(error)}`
}

/**
 * METRICS_PORT on METRICS_HOST (C53): the metrics listener, or undefined when
 * METRICS_PORT is not set. A port that cannot be bound stops the start with one
 * line naming METRICS_PORT.
 * @example const metrics = listenForMetrics(config, log, () => registry.snapshot())
 */
export function listenForMetrics(config: Config, log: Logger, gather: () => FamilySnapshot[] | Promise<FamilySnapshot[]>): ReturnType<typeof serveMetrics> | undefined {
  if (config.metricsPort === undefined) return undefined
  let server: ReturnType<typeof serveMetrics>
  try {
    server = serveMetrics({ hostname: config.metricsHost, port: config.metricsPort, gather, onError: (error) => log.error('a metrics scrape failed', { error }) })
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    const why = code === 'EADDRINUSE' ? 'is in use by another process' : `cannot be bound (${error instanceof Error ? error.message : String(error)})`
    throw new ConfigError(`METRICS_PORT ${config.metricsPort} on METRICS_HOST ${config.metricsHost} ${why}.`)
  }
  log.info('serving metrics', { metricsUrl: `http://${config.metricsHost}:${server.port}/metrics` })
  return server
}
