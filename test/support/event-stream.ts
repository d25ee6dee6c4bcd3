import { listenForChanges, type ChangeListener } from '../../src/cache/change-listener'
import { EventFeed, type EventFeedOptions } from '../../src/changes/event-feed'
import { createLogger } from '../../src/log'
import { testApp, type TestApp } from './app'

/** One message of a Server-Sent Events stream, as a browser's EventSource parses it (a comment has only `comment`). */
export interface StreamMessage {
  event?: string
  id?: string
  data?: string
  comment?: string
}

/**
 * Reads an event stream message by message, as EventSource does: fields up to
 * a blank line; `id` is what `Last-Event-ID` would carry after it.
 * @example const stream = new StreamReader(response); const message = await stream.next()
 */
export class StreamReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #decoder = new TextDecoder()
  #buffer = ''
  /** The last id seen, as EventSource keeps it. */
  lastEventId = ''

  constructor(response: Response) {
    this.#reader = response.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>
  }

  /** The next message, comments included; rejects after `timeoutMs`, or when the stream ends or errors. */
  async next(timeoutMs = 10_000): Promise<StreamMessage> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      const end = this.#buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = this.#buffer.slice(0, end)
        this.#buffer = this.#buffer.slice(end + 2)
        const message: StreamMessage = {}
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) message.comment = line.slice(1).trim()
          else {
            const at = line.indexOf(':')
            const field = line.slice(0, at) as 'event' | 'id' | 'data'
            message[field] = line.slice(at + 1).replace(/^ /, '')
          }
        }
        if (message.id !== undefined) this.lastEventId = message.id
        return message
      }
      const left = deadline - performance.now()
      if (left <= 0) throw new Error(`no message within ${timeoutMs} ms`)
      let timer: ReturnType<typeof setTimeout> | undefined
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), left)))
      const { value, done } = await Promise.race([this.#reader.read(), timeout]).finally(() => clearTimeout(timer))
      if (done) throw new Error('the stream ended')
      this.#buffer += this.#decoder.decode(value, { stream: true })
    }
  }

  /** The next `change` (or `reset`) event, skipping comments and id-only messages. */
  async nextEvent(timeoutMs = 10_000): Promise<{ event: string; id: string; data: any }> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      const message = await this.next(Math.max(1, deadline - performance.now()))
      if (message.data !== undefined) return { event: message.event ?? 'message', id: message.id ?? this.lastEventId, data: JSON.parse(message.data) }
    }
  }

  /** Whether the stream has ended (true) or errored (the error), waiting at most `timeoutMs`. */
  async ended(timeoutMs = 10_000): Promise<true | Error> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      try {
        await this.next(Math.max(1, deadline - performance.now()))
      } catch (error) {
        if ((error as Error).message === 'the stream ended') return true
        if ((error as Error).message.startsWith('no message within')) throw error
        return error as Error
      }
    }
  }

  cancel(): Promise<void> {
    return this.#reader.cancel()
  }
}

export interface EventTestApp extends TestApp {
  feed: EventFeed
  /** Opens the stream at `path` (GET /api/v1/events…), with these request headers. */
  open(path?: string, headers?: Record<string, string>): Promise<{ response: Response; stream: StreamReader }>
  /** Cancels every stream opened so far (a failed test leaves none behind). */
  cancelStreams(): Promise<void>
}

/**
 * The app with an event feed fed by a change listener of its own, as
 * `bun run start` wires them (without the cache), once the listener listens.
 * @example const api = await eventTestApp(db.url, { heartbeatMs: 200 })
 */
export async function eventTestApp(databaseUrl: string, options: Partial<EventFeedOptions> = {}, env: Record<string, string> = {}): Promise<EventTestApp> {
  let feed!: EventFeed
  const api = testApp(databaseUrl, env, undefined, undefined, {
    events: (sql, log) => (feed = new EventFeed({ sql, log, timeoutMs: 5000, maxSubscribers: 100, retentionDays: 30, ...options })),
  })
  let listening!: () => void
  const ready = new Promise<void>((resolve) => (listening = resolve))
  const listener: ChangeListener = listenForChanges(
    databaseUrl,
    {
      onListening: () => (feed.onListening(), listening()),
      onLost: () => feed.onLost(),
      onChange: (change) => feed.onChange(change),
      onLanguages: () => {},
    },
    { timeoutMs: 5000, heartbeatMs: 200, log: createLogger('silent') },
  )
  await ready
  const opened: StreamReader[] = []
  return {
    ...api,
    feed,
    async open(path = '/api/v1/events', headers = {}) {
      const response = await api.app.handle(new Request(`http://localhost${path}`, { headers }))
      const stream = new StreamReader(response)
      opened.push(stream)
      return { response, stream }
    },
    async cancelStreams() {
      await Promise.all(opened.splice(0).map((stream) => stream.cancel().catch(() => {})))
    },
    async close() {
      feed.close()
      await listener.stop()
      await api.close()
    },
  }
}
