import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * What the proxy does with connections:
 * - `forward`: passes bytes both ways;
 * - `refuse`: stops listening, so connecting fails at once with ECONNREFUSED;
 * - `hang`: accepts, and passes nothing either way (a frozen network or server); the
 *   open connections stop reading, and pass what they hold once the hang ends;
 * - `close-at-startup`: accepts, reads the client's first message, and closes (FIN), as a
 *   pooler or a server shutting down does;
 * - `reset-mid-answer`: passes the client's bytes, and resets the connection (RST) in the
 *   middle of the first answer larger than `resetAfterBytes`;
 * - `slow`: passes bytes both ways, each chunk `delayMs` late.
 */
export type ProxyMode = 'forward' | 'refuse' | 'hang' | 'close-at-startup' | 'reset-mid-answer' | 'slow'

export interface FaultProxy {
  readonly port: number
  /** `databaseUrl` pointed at the proxy. */
  url(databaseUrl: string): string
  /** Applies to new connections; `hang` also freezes the open ones. */
  setMode(mode: ProxyMode, options?: { delayMs?: number; resetAfterBytes?: number }): Promise<void>
  /** Resets (RST) every open connection, as a failover or a crashed pooler does. */
  resetAll(): void
  /** Open client connections. */
  readonly openConnections: number
  close(): Promise<void>
}

interface Pair {
  client: Socket
  server: Socket
}

/**
 * A small TCP proxy between the service and PostgreSQL, for fault tests: real
 * sockets, real protocol bytes, faults on demand.
 * @example const proxy = await startFaultProxy('127.0.0.1', 5432); await proxy.setMode('refuse')
 */
export async function startFaultProxy(targetHost: string, targetPort: number): Promise<FaultProxy> {
  let mode: ProxyMode = 'forward'
  let delayMs = 0
  let resetAfterBytes = 0
  const pairs = new Set<Pair>()
  const pauseBoth = ({ client, server }: Pair) => {
    client.pause()
    server.pause()
  }
  const held = new Set<Socket>()
  let listener: Server | undefined
  let port = 0

  const onConnection = (client: Socket) => {
    client.on('error', () => {})
    if (mode === 'hang') {
      held.add(client)
      client.on('close', () => held.delete(client))
      return
    }
    if (mode === 'close-at-startup') {
      client.once('data', () => client.end())
      return
    }
    const server = connect(targetPort, targetHost)
    const pair = { client, server }
    pairs.add(pair)
    server.on('error', () => client.destroy())
    const drop = () => {
      pairs.delete(pair)
      client.destroy()
      server.destroy()
    }
    client.on('close', drop)
    server.on('close', drop)
    const pass = (from: Socket, to: Socket, isAnswer: boolean) => {
      // TCP never reorders: a chunk waits behind those delayed before it, even once the network is fast again.
      let waiting = 0
      let tail = Promise.resolve()
      from.on('data', (chunk: Buffer) => {
        if (isAnswer && mode === 'reset-mid-answer' && chunk.length > resetAfterBytes) {
          to.write(chunk.subarray(0, Math.floor(chunk.length / 2)), () => to.resetAndDestroy())
          return
        }
        if (mode !== 'slow' && waiting === 0) {
          to.write(chunk)
          return
        }
        waiting++
        const delay = mode === 'slow' ? delayMs : 0
        tail = tail.then(async () => {
          await Bun.sleep(delay)
          waiting--
          if (to.writable) to.write(chunk)
        })
      })
    }
    pass(client, server, false)
    pass(server, client, true)
  }

  const listen = (at: number) =>
    new Promise<void>((resolve, reject) => {
      listener = createServer(onConnection)
      listener.once('error', reject)
      listener.listen(at, '127.0.0.1', () => {
        const address = listener!.address()
        port = typeof address === 'object' && address ? address.port : at
        resolve()
      })
    })
  // The listener stops accepting at once; its callback would wait for the open connections.
  const stopListening = () => {
    listener?.close()
    listener = undefined
  }

  await listen(0)
  return {
    get port() {
      return port
    },
    url(databaseUrl) {
      const url = new URL(databaseUrl)
      url.hostname = '127.0.0.1'
      url.port = String(port)
      return url.toString()
    },
    async setMode(next, options = {}) {
      delayMs = options.delayMs ?? 0
      resetAfterBytes = options.resetAfterBytes ?? 0
      const wasRefusing = mode === 'refuse'
      mode = next
      if (next === 'refuse' && !wasRefusing) stopListening()
      if (next !== 'refuse' && wasRefusing) await listen(port)
      if (next === 'hang') for (const pair of pairs) pauseBoth(pair)
      else {
        for (const { client, server } of pairs) {
          client.resume()
          server.resume()
        }
        // A connection accepted during the hang never reached the server: drop it, as a timeout would.
        for (const socket of held) socket.destroy()
      }
    },
    resetAll() {
      for (const { client, server } of pairs) {
        client.resetAndDestroy()
        server.destroy()
      }
      for (const socket of held) socket.resetAndDestroy()
    },
    get openConnections() {
      return pairs.size + held.size
    },
    async close() {
      stopListening()
      for (const { client, server } of pairs) {
        client.destroy()
        server.destroy()
      }
      for (const socket of held) socket.destroy()
    },
  }
}
