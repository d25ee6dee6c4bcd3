import type { Socket } from 'bun'

/** One request as it came on the wire. */
export interface RecordedRequest {
  method: string
  path: string
  /** Lower-case names. */
  headers: Record<string, string>
  /** The bytes of the request line and the headers, up to the blank line. */
  headBytes: number
  body: string
  /** performance.now() when it was complete. */
  at: number
}

export interface PurgeRecorder {
  url: string
  port: number
  requests: RecordedRequest[]
  /** The status of the next answers (a function: it may decide per request). */
  answer: (request: RecordedRequest) => number
  stop(): void
}

/**
 * A purge endpoint on a raw socket (`Bun.listen`, no HTTP library in the way):
 * it records each request as its bytes say, method included (Bun's fetch
 * sends GET for a method it does not know), and answers with `answer`'s status.
 * Requests on one connection are answered in turn (keep-alive).
 * @example const recorder = startPurgeRecorder(); PURGE_URLS = recorder.url
 */
export function startPurgeRecorder(answer: (request: RecordedRequest) => number = () => 200): PurgeRecorder {
  const requests: RecordedRequest[] = []
  const buffers = new WeakMap<Socket<unknown>, Buffer>()
  const recorder: PurgeRecorder = {
    url: '',
    port: 0,
    requests,
    answer,
    stop: () => server.stop(true),
  }
  const server = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket, chunk) {
        let buffer = Buffer.concat([buffers.get(socket) ?? Buffer.alloc(0), chunk])
        for (;;) {
          const end = buffer.indexOf('\r\n\r\n')
          if (end === -1) break
          const head = buffer.subarray(0, end).toString('latin1')
          const [line, ...fields] = head.split('\r\n')
          const headers: Record<string, string> = {}
          for (const field of fields) {
            const colon = field.indexOf(':')
            headers[field.slice(0, colon).trim().toLowerCase()] = field.slice(colon + 1).trim()
          }
          const length = Number(headers['content-length'] ?? 0)
          if (buffer.length < end + 4 + length) break
          const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8')
          buffer = buffer.subarray(end + 4 + length)
          const [method, path] = line.split(' ')
          const request = { method, path, headers, headBytes: end + 4, body, at: performance.now() }
          requests.push(request)
          const status = recorder.answer(request)
          socket.write(`HTTP/1.1 ${status} X\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}`)
        }
        buffers.set(socket, buffer)
      },
    },
  })
  recorder.port = server.port
  recorder.url = `http://127.0.0.1:${server.port}/`
  return recorder
}
