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
