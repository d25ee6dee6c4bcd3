import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'
import { listen } from '../src/http/listen'
import { PortInUseError } from '../src/http/serve'
import { jsonResponse } from '../src/http/json-response'
import { createLogger } from '../src/log'

const silent = createLogger('silent')

/** An app that answers with the settings it was built with. */
const echoSettings = (config: ReturnType<typeof loadConfig>) => ({
  fetch: () => jsonResponse({ publicUrl: config.publicUrl, mediaBaseUrl: config.mediaBaseUrl }),
})

describe('settings checked at start', () => {
  test('HOST: an IP address or a host name', () => {
    for (const host of ['0.0.0.0', '127.0.0.1', '::', '::1', 'localhost', 'api-1.internal.example']) {
      expect(loadConfig({ HOST: host }).host).toBe(host)
    }
    for (const host of ['my host', 'http://localhost', 'localhost:3000', '-dash.example', '[::1]', 'a_b']) {
      expect(() => loadConfig({ HOST: host })).toThrow(new ConfigError(`HOST must be an IP address or a host name (0.0.0.0 for every interface, 127.0.0.1, ::, localhost), not "${host}".`))
    }
  })

  test('C51: PURGE_URLS names http(s), fastly:// and cloudflare:// targets; a CDN target needs its token; the API URLs default to the real ones', () => {
    const config = loadConfig({
      PURGE_URLS: 'http://127.0.0.1:6081/, https://edge.example/purge ,fastly://SU1Z0isxPaozGVKXdv0eY,cloudflare://023e105f4ecef8ad9ca31a8372d0c353',
      FASTLY_API_TOKEN: 'f',
      CLOUDFLARE_API_TOKEN: 'c',
    })
    expect(config.purgeTargets).toEqual([
      { kind: 'xkey', url: 'http://127.0.0.1:6081/' },
      { kind: 'xkey', url: 'https://edge.example/purge' },
      { kind: 'fastly', service: 'SU1Z0isxPaozGVKXdv0eY' },
      { kind: 'cloudflare', zone: '023e105f4ecef8ad9ca31a8372d0c353' },
    ])
    expect([config.fastlyApiUrl, config.cloudflareApiUrl]).toEqual(['https://api.fastly.com', 'https://api.cloudflare.com'])
    expect(loadConfig({}).purgeTargets).toEqual([])
    expect(loadConfig({ FASTLY_API_URL: 'http://127.0.0.1:9/' }).fastlyApiUrl).toBe('http://127.0.0.1:9')
    for (const bad of ['varnish', 'ftp://edge', 'fastly://', 'cloudflare://a/b', 'http://user:pw@edge/']) {
      expect(() => loadConfig({ PURGE_URLS: bad })).toThrow(new ConfigError(`PURGE_URLS must be a comma-separated list of http(s)://host/path, fastly://<service id> or cloudflare://<zone id> URLs, not "${bad}".`))
    }
    expect(() => loadConfig({ PURGE_URLS: 'fastly://abc' })).toThrow(new ConfigError('FASTLY_API_TOKEN must be set: PURGE_URLS names a fastly:// service.'))
    expect(() => loadConfig({ PURGE_URLS: 'cloudflare://abc' })).toThrow(new ConfigError('CLOUDFLARE_API_TOKEN must be set: PURGE_URLS names a cloudflare:// zone.'))
    expect(() => loadConfig({ CLOUDFLARE_API_URL: 'api.cloudflare.com' })).toThrow(new ConfigError('CLOUDFLARE_API_URL must be an absolute http(s) URL, not "api.cloudflare.com".'))
  })

  test('C53: METRICS_PORT is off by default; METRICS_HOST defaults to HOST; bad values name the variable', () => {
    expect(loadConfig({})).toMatchObject({ metricsPort: undefined, metricsHost: '0.0.0.0' })
    expect(loadConfig({ METRICS_PORT: '9464', HOST: '127.0.0.1' })).toMatchObject({ metricsPort: 9464, metricsHost: '127.0.0.1' })
    expect(loadConfig({ METRICS_PORT: '0', METRICS_HOST: '::1' })).toMatchObject({ metricsPort: 0, metricsHost: '::1' })
    expect(() => loadConfig({ METRICS_PORT: 'x' })).toThrow(new ConfigError('METRICS_PORT must be a whole number from 0 to 65535, not "x".'))
    expect(() => loadConfig({ METRICS_PORT: '70000' })).toThrow(ConfigError)
    expect(() => loadConfig({ METRICS_PORT: '3000' })).toThrow(new ConfigError('METRICS_PORT must differ from PORT (3000): the metrics are never served on the public port.'))
    expect(() => loadConfig({ METRICS_PORT: '9464', METRICS_HOST: 'my host' })).toThrow(new ConfigError('METRICS_HOST must be an IP address or a host name (0.0.0.0 for every interface, 127.0.0.1, ::, localhost), not "my host".'))
  })

  test('EXTENSIONS_DIR: a folder named on purpose must exist; the shipped default is not checked', () => {
    expect(() => loadConfig({ EXTENSIONS_DIR: '/no/such/folder' })).toThrow(new ConfigError('EXTENSIONS_DIR must be a folder that exists, not "/no/such/folder" (/no/such/folder).'))
    expect(() => loadConfig({ EXTENSIONS_DIR: import.meta.path })).toThrow(ConfigError)
    expect(loadConfig({ EXTENSIONS_DIR: import.meta.dir }).extensionsDir).toBe(import.meta.dir)
    expect(loadConfig({}).extensionsDir).toMatch(/src\/hooks\/extensions$/)
  })

  test('C47: DATABASE_HEAVY_MAX is one connection in eight by default, at least one, never more than the pool; DATABASE_HEAVY_QUEUE 32', () => {
    expect(loadConfig({})).toMatchObject({ databasePoolMax: 10, databaseHeavyMax: 1, databaseHeavyQueue: 32 })
    expect(loadConfig({ DATABASE_POOL_MAX: '40' }).databaseHeavyMax).toBe(5)
    expect(loadConfig({ DATABASE_POOL_MAX: '3' }).databaseHeavyMax).toBe(1)
    expect(loadConfig({ DATABASE_POOL_MAX: '20', DATABASE_HEAVY_MAX: '20', DATABASE_HEAVY_QUEUE: '0' })).toMatchObject({ databaseHeavyMax: 20, databaseHeavyQueue: 0 })
    expect(() => loadConfig({ DATABASE_POOL_MAX: '20', DATABASE_HEAVY_MAX: '21' })).toThrow(new ConfigError('DATABASE_HEAVY_MAX must be a whole number from 1 to 20, not "21".'))
    expect(() => loadConfig({ DATABASE_HEAVY_MAX: '0' })).toThrow(ConfigError)
    expect(() => loadConfig({ DATABASE_HEAVY_QUEUE: '-1' })).toThrow(ConfigError)
  })

  test('VITRINE_SPARE: only a process that bun run dev starts as a worker waits for its start signal', () => {
    expect(loadConfig({ VITRINE_WORKER: '1', VITRINE_SPARE: '1' }).isSpare).toBe(true)
    expect(loadConfig({ VITRINE_SPARE: '1' }).isSpare).toBe(false)
    expect(loadConfig({ VITRINE_WORKER: '1' }).isSpare).toBe(false)
  })
})

describe('listen', () => {
  test('PORT=0: the URLs derived from PORT name the port actually bound', async () => {
    const env = { PORT: '0', HOST: '127.0.0.1' }
    const { server, config } = listen(loadConfig(env), env, silent, echoSettings)
    try {
      expect(server.port).toBeGreaterThan(0)
      expect(config.port).toBe(server.port!)
      const answer = await (await fetch(`http://127.0.0.1:${server.port}/`)).json()
      expect(answer).toEqual({ publicUrl: `http://localhost:${server.port}`, mediaBaseUrl: `http://localhost:${server.port}/media` })
    } finally {
      server.stop(true)
    }
  })

  test('PORT=0 leaves a PUBLIC_URL or MEDIA_BASE_URL that was set alone', async () => {
    const env = { PORT: '0', HOST: '127.0.0.1', PUBLIC_URL: 'https://api.example.com', MEDIA_BASE_URL: 'https://cdn.example.com/m' }
    const { server, config } = listen(loadConfig(env), env, silent, echoSettings)
    server.stop(true)
    expect([config.publicUrl, config.mediaBaseUrl]).toEqual(['https://api.example.com', 'https://cdn.example.com/m'])
  })

  test('a port in use is one line naming PORT', () => {
    const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    try {
      const env = { PORT: String(taken.port), HOST: '127.0.0.1' }
      expect(() => listen(loadConfig(env), env, silent, echoSettings)).toThrow(
        new PortInUseError(`PORT ${taken.port} on HOST 127.0.0.1 is in use by another process (EADDRINUSE).`),
      )
    } finally {
      taken.stop(true)
    }
  })
})
