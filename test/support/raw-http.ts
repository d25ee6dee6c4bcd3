import { connect } from 'node:net'

export interface RawExchange {
  /** Everything the server sent before it closed the connection. */
  text: string
  /** The status codes of the responses in `text`, in order. */
  statuses: number[]
}

/**
 * Writes bytes to a server as they are, with no HTTP client in the way, and
 * collects what comes back until the server closes the connection (send
 * `Connection: close`, or HTTP/1.0). A server that keeps it open for
 * `timeoutMs` fails the call: nothing here waits a fixed time as proof.
 * @example await rawRequest(port, 'CONNECT 127.0.0.1:3000 HTTP/1.1\r\nHost: x\r\n\r\n')
 */
export function rawRequest(port: number, bytes: string, timeoutMs = 10_000): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    let text = ''
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`The server kept the connection open for ${timeoutMs} ms; it sent: ${JSON.stringify(text.slice(0, 300))}`))
    }, timeoutMs)
    socket.on('data', (chunk) => (text += chunk.toString('latin1')))
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ text, statuses: [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((match) => Number(match[1])) })
    })
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
}
