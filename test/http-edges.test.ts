import { afterAll, describe, expect, test } from 'bun:test'
import { serveApp } from '../src/http/serve'
import { createLogger } from '../src/log'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'
import { rawRequest } from './support/raw-http'
import { startService } from './support/service'

/**
 * Issue 13, item 1 and 6: what a client can put on the request line and in
 * Host. Every case goes over a real socket: Bun shapes request.url from them.
 */
const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' } } })
const api = testApp(db.url)
const server = serveApp(api.app, { port: 0, hostname: '127.0.0.1', log: createLogger('silent') })
const port = server.port!
afterAll(async () => {
  await server.stop(true)
  await api.close()
  await db.sql.end()
})

const get = (target: string, host: string | null, method = 'GET') =>
  rawRequest(port, `${method} ${target} HTTP/1.1\r\n${host === null ? '' : `Host: ${host}\r\n`}Connection: close\r\n\r\n`)
const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))

describe('the request line and Host cannot crash or steer the service', () => {
  test('CONNECT with an authority-form target: a JSON 400, and the server keeps serving', async () => {
    const connect = await rawRequest(port, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
    expect(connect.statuses).toEqual([400])
    expect(bodyOf(connect.text)).toEqual({ error: 'Bad request.' })
    expect((await get('/api/v1/content/post/hello', 'localhost')).statuses).toEqual([200])
  })

  test('HTTP/1.1 without Host is refused (RFC 9112); HTTP/1.0 without Host is routed by its path', async () => {
    expect((await get('/api/v1/content/post/hello', null)).statuses).toEqual([400])
    const response = await rawRequest(port, 'GET /api/v1/content/post/hello HTTP/1.0\r\n\r\n')
    expect(response.statuses).toEqual([200])
    expect(bodyOf(response.text).data.slug).toBe('hello')
  })

  test('C3/C4: routing uses the path alone, whatever the Host (short, empty, odd, or an absolute-form target)', async () => {
    for (const host of ['a', 'ab', 'abc', '', 'a/b', 'a?b', '[::1]:80', 'cms.example.com']) {
      expect([host, (await get('/api/v1/content/post', host, 'DELETE')).statuses]).toEqual([host, [405]])
      expect([host, (await get('/xx/api/v1/content/post', host)).statuses]).toEqual([host, [404]])
      const found = await get('/api/v1/content/post/hello?lang=en', host)
      expect([host, found.statuses, bodyOf(found.text).data.slug]).toEqual([host, [200], 'hello'])
    }
    const absolute = await get('http://elsewhere.example/api/v1/content/post/hello', 'a')
    expect([absolute.statuses, bodyOf(absolute.text).data.slug]).toEqual([[200], 'hello'])
  })

  test('the asterisk-form target is refused, and the server keeps serving', async () => {
    expect((await get('*', 'a', 'OPTIONS')).statuses).toEqual([400])
    expect((await get('/healthz', 'a')).statuses).toEqual([200])
  })
})

describe('bun run start survives what once stopped it', () => {
  test('CONNECT and HTTP/1.0 without Host: answered, logged, and the process still serves', async () => {
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'info' })
    try {
      const servicePort = Number(new URL(service.url).port)
      expect((await rawRequest(servicePort, `CONNECT 127.0.0.1:${servicePort} HTTP/1.1\r\nHost: x\r\n\r\n`)).statuses).toEqual([400])
      expect((await rawRequest(servicePort, 'GET / HTTP/1.0\r\n\r\n')).statuses).toEqual([302])
      expect((await rawRequest(servicePort, 'GET /api/v1/content/post/hello HTTP/1.0\r\n\r\n')).statuses).toEqual([200])
      expect(service.process.exitCode).toBeNull()
      expect(service.output()).not.toContain('unhandled')
      expect(service.output()).not.toContain('"level":"error"')
    } finally {
      expect(await service.stop()).toBe(0)
    }
  })
})
