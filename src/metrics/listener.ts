import type { Server } from 'bun'
import { formatFor, OPENMETRICS_TEXT, PROMETHEUS_TEXT, writeExposition } from './exposition'
import type { FamilySnapshot } from './registry'

export interface MetricsListenerOptions {
  hostname: string
  port: number
  /** Every family's values now: this process's, or, under WORKERS, every worker's merged. */
  gather: () => FamilySnapshot[] | Promise<FamilySnapshot[]>
  /** A scrape that failed to gather (logged by the caller). */
  onError?: (error: unknown) => void
}

/**
 * METRICS_PORT (C53): a listener of its own, never the public port, that
 * answers `GET /metrics` and nothing else (404; 405 for another method on
 * /metrics). A port in use throws as Bun.serve does.
 * @example serveMetrics({ hostname: '127.0.0.1', port: 9464, gather: () => registry.snapshot() })
 */
export function serveMetrics(options: MetricsListenerOptions): Server<undefined> {
  return Bun.serve({
    hostname: options.hostname,
    port: options.port,
    development: false,
    async fetch(request) {
      if (pathOf(request.url) !== '/metrics') return plain(404, 'Not found: the metrics are at /metrics.\n')
      if (request.method !== 'GET' && request.method !== 'HEAD') return plain(405, 'Only GET.\n', { Allow: 'GET, HEAD' })
      const format = formatFor(request.headers.get('accept'))
      try {
        const text = writeExposition(await options.gather(), format)
        return new Response(request.method === 'HEAD' ? null : text, {
          headers: { 'Content-Type': format === 'openmetrics' ? OPENMETRICS_TEXT : PROMETHEUS_TEXT, 'Cache-Control': 'no-store' },
        })
      } catch (error) {
        options.onError?.(error)
        return plain(503, 'The metrics could not be gathered.\n')
      }
    },
  })
}

function pathOf(url: string): string {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const end = url.indexOf('?', start)
  return end === -1 ? url.slice(start) : url.slice(start, end)
}

function plain(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { 'Content-Type': 'text/plain; charset=utf-8', ...headers } })
}
