/**
 * One client's event stream (C49): what the feed sends goes into a queue the
 * HTTP response reads from as the socket takes it. A client that stops
 * reading lets the queue grow; before it passes `maxBacklogBytes` the client
 * is dropped (its stream errors, its connection is closed), so that it holds
 * no more memory and the feed never waits for it.
 */
export class EventSubscriber {
  readonly stream: ReadableStream<Uint8Array>
  #controller!: ReadableStreamDefaultController<Uint8Array>
  /** What came while the client's own catch-up was read; null once it is sent. */
  #held: Uint8Array[] | null
  #heldBytes = 0
  #open = true

  constructor(
    /** The type slugs asked for; null: every type. */
    readonly types: ReadonlySet<string> | null,
    readonly maxBacklogBytes: number,
    private readonly onEnd: (subscriber: EventSubscriber, dropped: boolean) => void,
    /** Closes the client's connection at once (the server's), when it has one. */
    private readonly closeConnection: () => void,
    { holding = false } = {},
  ) {
    this.#held = holding ? [] : null
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller
        },
        // The client went away.
        cancel: () => this.#end(false),
      },
      { highWaterMark: maxBacklogBytes, size: (chunk) => chunk?.byteLength ?? 0 },
    )
  }

  get open(): boolean {
    return this.#open
  }

  /** Queues `chunk`, or holds it while the catch-up is read; drops the client whose backlog it would overflow. */
  send(chunk: Uint8Array): void {
    if (!this.#open) return
    // One chunk larger than the bound goes when nothing waits before it: a client that reads is never dropped for it.
    if (this.#held) {
      if (this.#heldBytes > 0 && this.#heldBytes + chunk.byteLength > this.maxBacklogBytes) return this.drop()
      this.#heldBytes += chunk.byteLength
      this.#held.push(chunk)
      return
    }
    const room = this.#controller.desiredSize ?? 0
    if (chunk.byteLength > room && room < this.maxBacklogBytes) return this.drop()
    this.#controller.enqueue(chunk)
  }

  /** Sends `first` (the catch-up), then what was held meanwhile, and goes live. */
  release(first: Uint8Array | null): void {
    const held = this.#held ?? []
    this.#held = null
    this.#heldBytes = 0
    if (first) this.send(first)
    for (const chunk of held) this.send(chunk)
  }

  /** The end of a graceful stop: what is queued is sent, then the response ends. */
  close(): void {
    if (!this.#open) return
    this.#end(false)
    this.#controller.close()
  }

  /** A client too slow to keep up: its queue goes, its connection is closed. */
  drop(): void {
    if (!this.#open) return
    this.#end(true)
    this.#controller.error(new Error('event subscriber dropped: it did not read its backlog'))
    // Its socket may be gone already; nothing else may fail for it.
    try {
      this.closeConnection()
    } catch {}
  }

  #end(dropped: boolean): void {
    if (!this.#open) return
    this.#open = false
    this.#held = null
    this.onEnd(this, dropped)
  }
}
