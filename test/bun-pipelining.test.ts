import { describe, expect, test } from 'bun:test'
import { rawRequest } from './support/raw-http'

/**
 * Issue 13, item 7: a minimal reproduction of how Bun.serve treats HTTP/1.1
 * requests pipelined behind an async handler. On Bun 1.4.5 (the newest
 * release) it answers none of them and closes the connection (docs/operations.md,
 * "Behind a proxy", says which proxies to put in front). What must
 * hold whatever Bun does: requests are answered in order until the
 * connection is closed; never a hang, never a reordered answer.
 */
describe('HTTP/1.1 pipelining in Bun.serve', () => {
  for (const kind of ['sync', 'async'] as const) {
    test(`three requests pipelined to a ${kind} handler: all answered in order, or the connection closed`, async () => {
      const server = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        fetch(request) {
          const answer = new Response(`answer ${new URL(request.url).searchParams.get('n')}`)
          return kind === 'async' ? Bun.sleep(1).then(() => answer) : answer
        },
      })
      try {
        const requests = [1, 2, 3].map((n) => `GET /?n=${n} HTTP/1.1\r\nHost: x\r\n${n === 3 ? 'Connection: close\r\n' : ''}\r\n`).join('')
        const { statuses, text } = await rawRequest(server.port!, requests)
        const answers = [...text.matchAll(/answer (\d)/g)].map((match) => match[1])
        // The answers given are the first ones, in order; the connection is closed after them.
        expect(answers).toEqual(['1', '2', '3'].slice(0, answers.length))
        expect(statuses).toEqual(answers.map(() => 200))
        console.log(`pipelining to a ${kind} handler on Bun ${Bun.version}: ${answers.length} of 3 answered, then the connection closed`)
      } finally {
        await server.stop(true)
      }
    })
  }
})
