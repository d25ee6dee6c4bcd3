import type { Change, ChangeHandlers } from '../cache/change-listener'
import type { Sql } from '../db/connect'
import { contentTypeNotFound, HttpError, serviceUnavailable } from '../http/errors'
import type { Logger } from '../log'
import { encodeEventMark, type EventMark } from './event-mark'
import { readChangesSince, type ChangesRead, type TypeChange } from './event-statement'
import { EventSubscriber } from './event-subscriber'

export interface EventFeedOptions {
  sql: Sql
  log: Logger
  /** DATABASE_TIMEOUT_MS, for each read of the change log. */
  timeoutMs: number
  /** EVENTS_MAX_SUBSCRIBERS: streams held at once; beyond, 503. */
  maxSubscribers: number
  /** SYNC_RETENTION_DAYS: a mark older than this gets `event: reset`. */
  retentionDays: number
  /** How often an idle stream gets a comment line (C49: 15 s). */
  heartbeatMs?: number
  /** The most a client that does not read may have queued before it is dropped. */
  maxBacklogBytes?: number
  /**
   * How old the feed's mark may get before a heartbeat reads the log again, writes or not (1 hour): the ids
   * that heartbeats hand out then never age past SYNC_RETENTION_DAYS on a site nobody writes to.
   */
  markRefreshMs?: number
}

export interface SubscribeOptions {
  /** Type slugs; null: every type. Each must be a type (404 as C5). */
  types: string[] | null
  /** The client's `Last-Event-ID`, read back; null: from now on. */
  since: EventMark | null
  /** Closes the client's connection at once (the server's `timeout`), when it is dropped. */
  closeConnection?: () => void
}

const HEARTBEAT_MS = 15_000
const MARK_REFRESH_MS = 3_600_000
const MAX_BACKLOG_BYTES = 256 * 1024
/** After a failed read of the log, the next try. */
const RETRY_MS = 1000
/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1
const MICROS_PER_DAY = 86_400_000_000n

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(':\n\n')

/**
 * The event stream's source in one process (C49): one read of the change log
 * per burst of notifications (or go-live, or reconnection of the listener),
 * whatever the number of subscribers, fanned out to each subscriber's
 * stream as `change` events. Reads start from the feed's mark, so a
 * notification missed while the listener reconnected is read all the same.
 * Without subscribers it reads nothing.
 * @example const feed = new EventFeed({ sql, log, timeoutMs: 5000, maxSubscribers: 10000, retentionDays: 30 })
 */
export class EventFeed implements ChangeHandlers {
  readonly #options: Required<EventFeedOptions>
  readonly #subscribers = new Set<EventSubscriber>()
  /** Where the next read starts; null while nobody subscribes. */
  #mark: EventMark | null = null
  #types: ReadonlySet<string> = new Set()
  #reading: Promise<void> | null = null
  #readAgain = false
  #goLive: ReturnType<typeof setTimeout> | undefined
  #retry: ReturnType<typeof setTimeout> | undefined
  #heartbeat: ReturnType<typeof setInterval> | undefined
  #closed = false
  /** Counts the times the mark was forgotten: a read from an older one is dropped. */
  #generation = 0
  /** Why the latest read failed; null when it did not. */
  #failure: unknown = null
  /** Catch-up reads in flight, by the mark they start from, with the live reads told when each was sent. */
  readonly #catchUps = new Map<string, { read: Promise<ChangesRead>; told: number }>()
  /** Live reads told to the subscribers so far: a catch-up sent before one of them cannot stand in for it. */
  #told = 0
  /** Subscribers on their way in (between the first check and joining): the mark is not forgotten under them. */
  #arriving = 0
  /** Before when marks were pruned, as the latest read said. */
  #prunedBeforeMicros: bigint | null = null

  constructor(options: EventFeedOptions) {
    this.#options = { heartbeatMs: HEARTBEAT_MS, maxBacklogBytes: MAX_BACKLOG_BYTES, markRefreshMs: MARK_REFRESH_MS, ...options }
  }

  /** Streams open now. */
  get subscribers(): number {
    return this.#subscribers.size
  }

  /**
   * A new stream: from now on, or from the client's mark (its catch-up read
   * first, in the heavy lane: a mark can be a month old). Refused with 503
   * when the feed is full or stopping, or the database cannot be read.
   */
  async subscribe(options: SubscribeOptions): Promise<ReadableStream<Uint8Array>> {
    this.#admit()
    // The first subscriber starts from now, not from a mark read for nobody.
    if (this.#subscribers.size === 0 && this.#arriving === 0) this.#forget()
    this.#arriving++
    try {
      await this.#ready()
    } finally {
      this.#arriving--
    }
    for (const type of options.types ?? []) {
      if (!this.#types.has(type)) throw contentTypeNotFound()
    }
    this.#admit()
    // Forgotten meanwhile (the last subscriber left while this one waited): nothing can be promised from it.
    if (this.#mark === null) throw serviceUnavailable()
    const subscriber = new EventSubscriber(
      options.types && new Set(options.types),
      this.#options.maxBacklogBytes,
      (ended, dropped) => this.#remove(ended, dropped),
      options.closeConnection ?? (() => {}),
      { holding: options.since !== null },
    )
    this.#add(subscriber)
    if (options.since === null) {
      // An id only, no event: a client that reconnects before any event resumes from here.
      subscriber.send(encoder.encode(`id: ${encodeEventMark(this.#mark!)}\n\n`))
      return subscriber.stream
    }
    try {
      subscriber.release(await this.#catchUp(options.since, subscriber.types))
    } catch (error) {
      subscriber.close()
      throw error
    }
    return subscriber.stream
  }

  /** The end of a graceful stop: every stream ends, none is accepted any more. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#goLive)
    clearTimeout(this.#retry)
    clearInterval(this.#heartbeat)
    for (const subscriber of [...this.#subscribers]) subscriber.close()
  }

  onListening(): void {
    // Anything committed while nobody listened is in the log after the mark.
    if (this.#mark !== null || this.#reading !== null) this.#requestRead()
  }

  onLost(): void {}

  onChange(_change: Change): void {
    // While the first read is in flight too: its snapshot may be older than this commit (read again after it).
    if (this.#mark !== null || this.#reading !== null) this.#requestRead()
  }

  onLanguages(): void {}

  #admit(): void {
    if (this.#closed || this.#subscribers.size >= this.#options.maxSubscribers) {
      if (!this.#closed) this.#options.log.warn('event stream refused: EVENTS_MAX_SUBSCRIBERS streams are open', { max: this.#options.maxSubscribers })
      throw serviceUnavailable()
    }
  }

  /** The feed has a mark and knows the types (one read, shared by everyone who waits). */
  async #ready(): Promise<void> {
    while (this.#mark === null) {
      if (this.#closed) throw serviceUnavailable()
      // A read in flight gives a mark too (or shows it could not): wait for it rather than ask for another.
      if (!this.#reading) this.#requestRead()
      await this.#reading
      // A database fault is C22's 503 (the request policy answers it). Without a failure, the read
      // was one that ended as the last subscriber left: read again.
      if (this.#mark === null && this.#failure !== null) throw this.#failure
    }
  }

  /** The client's changes since its mark, as one chunk; `event: reset` when the mark is too old or not this database's. */
  async #catchUp(since: EventMark, types: ReadonlySet<string> | null): Promise<Uint8Array | null> {
    // Decided before any read: an expired mark costs nothing (a forged one neither).
    const at = BigInt(since.atMicros)
    const expired =
      at < BigInt(Date.now()) * 1000n - BigInt(this.#options.retentionDays) * MICROS_PER_DAY ||
      (this.#prunedBeforeMicros !== null && at < this.#prunedBeforeMicros)
    // The feed's own mark: the live reads from it, held meanwhile, follow.
    if (expired) return reset(this.#mark!)
    const read = await this.#readSince(since)
    // Past the log's end even now (another instance may have read further than this feed last did): not this database's.
    if (BigInt(since.position) > BigInt(read.mark.position)) return reset(read.mark)
    const text = eventsText(read.changes, types, encodeEventMark(since), encodeEventMark(read.mark))
    return text ? encoder.encode(text) : null
  }

  /**
   * The log since a client's mark, one statement for every client resuming
   * from the same mark at once: after a deploy, every client of an instance
   * reconnects with the same last id, and would otherwise fill the heavy lane.
   */
  #readSince(since: EventMark): Promise<ChangesRead> {
    const key = encodeEventMark(since)
    const shared = this.#catchUps.get(key)
    // Joined only if no live read was told since it was sent: one told meanwhile may hold a commit it cannot see.
    if (shared && shared.told === this.#told) {
      // A 429 refused the client whose request sent the read (C52's heavy quota), not this one: it reads for itself.
      return shared.read.catch((error: unknown) => {
        if (error instanceof HttpError && error.status === 429) return this.#readSince(since)
        throw error
      })
    }
    const read = readChangesSince(this.#options.sql, since, { timeoutMs: this.#options.timeoutMs, heavy: true })
    const entry = { read, told: this.#told }
    this.#catchUps.set(key, entry)
    const forget = () => this.#catchUps.get(key) === entry && this.#catchUps.delete(key)
    read.then(forget, forget)
    return read
  }

  #requestRead(): void {
    if (this.#closed) return
    if (this.#reading) {
      this.#readAgain = true
      return
    }
    clearTimeout(this.#retry)
    this.#reading = this.#read().finally(() => {
      this.#reading = null
      if (this.#readAgain) {
        this.#readAgain = false
        if (this.#mark !== null) this.#requestRead()
      }
    })
  }

  async #read(): Promise<void> {
    const since = this.#mark
    const generation = this.#generation
    let read: ChangesRead
    try {
      read = await readChangesSince(this.#options.sql, since, { timeoutMs: this.#options.timeoutMs, heavy: false })
      this.#failure = null
    } catch (error) {
      this.#failure = error
      this.#options.log.warn('event stream: the change log could not be read; trying again', { error })
      if (since !== null && !this.#closed) this.#retry = setTimeout(() => this.#requestRead(), RETRY_MS)
      return
    }
    // A read from a mark forgotten meanwhile is nobody's.
    if (since !== null && generation !== this.#generation) return
    // Nobody is left to tell: the next subscriber takes a fresh mark.
    if (since !== null && this.#subscribers.size === 0) return this.#forget()
    this.#mark = read.mark
    this.#types = new Set(read.types)
    this.#prunedBeforeMicros = read.prunedBeforeMicros === null ? null : BigInt(read.prunedBeforeMicros)
    this.#told++
    if (since !== null) this.#dispatch(read.changes, encodeEventMark(since), encodeEventMark(read.mark))
    if (since !== null) this.#endStreamsOfGoneTypes(read.mark)
    clearTimeout(this.#goLive)
    if (this.#closed || this.#mark === null) return
    if (read.nextGoLiveInMs !== null) this.#goLive = setTimeout(() => this.#requestRead(), Math.min(MAX_TIMER_MS, read.nextGoLiveInMs + 5))
  }

  /** Each subscriber gets the events of its types in one chunk; subscribers asking the same types share its bytes. */
  #dispatch(changes: TypeChange[], startId: string, endId: string): void {
    if (changes.length === 0) return
    const chunks = new Map<string, Uint8Array | null>()
    for (const subscriber of [...this.#subscribers]) {
      const key = subscriber.types === null ? '' : [...subscriber.types].join(',')
      let chunk = chunks.get(key)
      if (chunk === undefined) {
        const text = eventsText(changes, subscriber.types, startId, endId)
        chunk = text ? encoder.encode(text) : null
        chunks.set(key, chunk)
      }
      if (chunk) this.#send(subscriber, chunk)
    }
  }

  /**
   * A type deleted or renamed: its rows no longer join a type, so its subscribers would hear nothing of it
   * again. Each gets `event: reset` and its stream ends: the client reconnects, and asking for a type that
   * is gone is a 404 (C5), which ends an EventSource for good.
   */
  #endStreamsOfGoneTypes(mark: EventMark): void {
    for (const subscriber of [...this.#subscribers]) {
      if (subscriber.types === null || [...subscriber.types].every((type) => this.#types.has(type))) continue
      this.#send(subscriber, reset(mark))
      subscriber.close()
    }
  }

  /** One subscriber's failure is its own: it is dropped, the others are told. */
  #send(subscriber: EventSubscriber, chunk: Uint8Array): void {
    try {
      subscriber.send(chunk)
    } catch (error) {
      this.#options.log.error('event stream: a subscriber could not be sent an event; it is dropped', { error })
      subscriber.drop()
    }
  }

  #add(subscriber: EventSubscriber): void {
    this.#subscribers.add(subscriber)
    this.#heartbeat ??= setInterval(() => {
      // With the feed's mark: every subscriber has been sent what the log holds of its types up to it (or holds it
      // behind its catch-up), so a client whose types stay quiet resumes from a recent id, not the one it opened with.
      const chunk = this.#mark === null ? HEARTBEAT : encoder.encode(`:\nid: ${encodeEventMark(this.#mark)}\n\n`)
      for (const each of [...this.#subscribers]) this.#send(each, chunk)
      // A quiet site: the mark's time moves on with a read that finds nothing (its go-lives are read up to now too).
      if (this.#mark !== null && BigInt(Date.now()) * 1000n - BigInt(this.#mark.atMicros) > BigInt(this.#options.markRefreshMs) * 1000n) this.#requestRead()
    }, this.#options.heartbeatMs)
  }

  #remove(subscriber: EventSubscriber, dropped: boolean): void {
    this.#subscribers.delete(subscriber)
    if (dropped) this.#options.log.warn('event subscriber dropped: it did not read its backlog', { maxBacklogBytes: this.#options.maxBacklogBytes })
    if (this.#subscribers.size === 0) this.#forget()
  }

  #forget(): void {
    this.#generation++
    this.#mark = null
    clearTimeout(this.#goLive)
    clearTimeout(this.#retry)
    clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
  }
}

/** `event: reset` (sync again), with the mark the stream goes on from. */
function reset(mark: EventMark): Uint8Array {
  return encoder.encode(`event: reset\nid: ${encodeEventMark(mark)}\ndata: {}\n\n`)
}

/**
 * The `change` events of `types` (null: all), in the order read. Every event
 * but the last carries the mark the read started from, the last the mark it
 * ended at: a client cut off between two of them resumes from the start, and
 * may see an event twice, never miss one.
 */
function eventsText(changes: TypeChange[], types: ReadonlySet<string> | null, startId: string, endId: string): string {
  const mine = types === null ? changes : changes.filter((change) => types.has(change.type))
  return mine.map((change, index) => `event: change\nid: ${index === mine.length - 1 ? endId : startId}\ndata: ${JSON.stringify(change)}\n\n`).join('')
}
