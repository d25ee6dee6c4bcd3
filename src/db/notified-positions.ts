import { ANY_TYPE, type AnswerTypes } from '../cache/answer-store'
import type { Change, ChangeHandlers, LanguageSet } from '../cache/change-listener'
import type { Logger } from '../log'

/** The key of changes of every content type (a `<table>:*` notification, or listening again). */
const EVERYTHING = 'all'
type Key = number | typeof EVERYTHING

/** Positions kept to measure a replica's lag; past this, the middle ones go (the oldest, which says how far behind a laggard is, stays). */
const MAX_RECENT_POSITIONS = 4096
/** How long to wait before asking again for a position the primary did not give. */
const RETRY_MS = 100

/**
 * C50: the primary's WAL position of the last change notified, per content
 * type and for "everything", as the change listener hears them (it is one of
 * its handlers). After a notification has arrived its commit is durable, so
 * the primary's WAL insert position asked then is at or past the commit
 * record; a position read inside the trigger would be before it. Until that
 * answer is in, the type's position is pending: no replica can be shown to
 * have replayed the change, and its reads go to the primary. While nobody
 * listens, every position is pending.
 * @example const positions = new NotifiedPositions(() => askInsertPosition(sql), log)
 */
export class NotifiedPositions implements ChangeHandlers {
  #listening = false
  /** Notifications counted; a position asked when the count was n covers the first n. */
  #count = 0
  /** Keys notified whose position is not known yet, with the count of their last notification. */
  #pending = new Map<Key, number>()
  #positions = new Map<Key, bigint>()
  /** Positions known, oldest first, with performance.now() when they were: how long a replica has been behind. */
  #recent: { position: bigint; at: number }[] = []
  #asking = false
  #failing = false
  #retry: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly askPosition: () => Promise<bigint>,
    private readonly log: Logger,
  ) {}

  /**
   * The position a replica must have replayed before its answer for `type`
   * may be served: the last notified change of that type and of everything
   * (ANY_TYPE: of any type; null: of everything). Null while one is pending
   * or nobody listens: only the primary's answer will do.
   */
  required(type: AnswerTypes): bigint | null {
    if (!this.#listening) return null
    const keys: Key[] = type === ANY_TYPE ? [EVERYTHING, ...this.#positions.keys(), ...this.#pending.keys()] : type === null ? [EVERYTHING] : [EVERYTHING, type]
    let required = 0n
    for (const key of keys) {
      if (this.#pending.has(key)) return null
      const position = this.#positions.get(key) ?? 0n
      if (position > required) required = position
    }
    return required
  }

  /** Milliseconds since the first notified position past `replayed` was known: how far behind a replica is (0 when it is not). */
  lagMs(replayed: bigint, now = performance.now()): number {
    const behind = this.#recent.find((known) => known.position > replayed)
    return behind === undefined ? 0 : now - behind.at
  }

  /** Forgets the positions every replica has replayed. */
  forgetReplayed(replayedByAll: bigint): void {
    const kept = this.#recent.findIndex((known) => known.position > replayedByAll)
    this.#recent.splice(0, kept === -1 ? this.#recent.length : kept)
  }

  onListening(_languages: LanguageSet): void {
    this.#listening = true
    // Anything may have been written while nobody listened: everything waits for a position asked from now on.
    this.#notify([EVERYTHING])
  }

  onLost(): void {
    this.#listening = false
    this.#pending.clear()
    this.#positions.clear()
    this.#recent = []
  }

  onChange(change: Change): void {
    this.#notify(change.typeIds === 'all' ? [EVERYTHING] : [...change.typeIds])
  }

  onLanguages(_languages: LanguageSet): void {}

  stop(): void {
    this.#listening = false
    clearTimeout(this.#retry)
  }

  #notify(keys: Key[]): void {
    this.#count++
    for (const key of keys) this.#pending.set(key, this.#count)
    this.#ask()
  }

  /** One question at a time: notifications that arrive meanwhile share the next. */
  #ask(): void {
    if (this.#asking || this.#pending.size === 0 || !this.#listening) return
    this.#asking = true
    const covered = this.#count
    this.askPosition().then(
      (position) => {
        this.#asking = false
        this.#failing = false
        if (!this.#listening) return
        for (const [key, count] of this.#pending) {
          if (count > covered) continue
          this.#pending.delete(key)
          this.#positions.set(key, position)
        }
        this.#recent.push({ position, at: performance.now() })
        if (this.#recent.length > MAX_RECENT_POSITIONS) this.#recent.splice(1, MAX_RECENT_POSITIONS / 2)
        this.#ask()
      },
      (error) => {
        this.#asking = false
        // Once per run of failures: the question is asked again every RETRY_MS.
        if (!this.#failing) this.log.warn('the primary did not give its WAL position: reads of the changed types go to the primary', { error })
        this.#failing = true
        clearTimeout(this.#retry)
        this.#retry = setTimeout(() => this.#ask(), RETRY_MS)
      },
    )
  }
}

/**
 * `X/Y` (a pg_lsn as PostgreSQL writes it) as a number of bytes.
 * @example parsePosition('16/B374D848') // 97500059720n
 */
export function parsePosition(text: string): bigint {
  const [high, low] = text.split('/')
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}
