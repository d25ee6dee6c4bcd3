import type { Change, ChangeHandlers } from './change-listener'

/** Types remembered at most: only existing types are, so this bounds nothing a site has, only a flood of renames. */
const MAX_TYPES = 10_000

/** What a statement of a type is told before it is sent (`NextGoLives.before`). */
export interface GoLiveRead {
  /** The statement must read its type's next go-live: the process does not know it. */
  readonly read: boolean
  /**
   * The type's next go-live in seconds from now (null: none), given what the
   * statement returned: its type's id, and the go-live it read (ignored unless
   * `read`), which is remembered while nothing is written.
   */
  settle(typeId: number | null, readSeconds: number | null): number | null
}

/** Without the listener's knowledge: every statement reads its type's next go-live. */
export const READ_EVERY_TIME: GoLiveRead = { read: true, settle: (_typeId, readSeconds) => readSeconds }

/**
 * C36: each content type's next go-live, as the last statement that read it
 * found it, remembered while the change listener hears every write: the
 * next statement of that type need not read it again (a subquery that cost
 * PostgreSQL 18 µs of a single entry's 215, issue 45). Only a write to the
 * type can bring its next go-live nearer, and every such write is notified
 * with the type's id (the cache's own rule, C36): the type is then
 * forgotten. What is remembered is forgotten when its moment comes too
 * (the next go-live after it is read again), when the listener is lost, and
 * whenever a write was notified while the statement that read it ran (its
 * snapshot may predate the write). Keyed by the type's slug, as requests
 * name it, with its id, as notifications name it; an unknown type is never
 * remembered (creating it would be notified under an id nothing holds).
 * @example const goLive = goLives.before('post'); // the statement reads the go-live when goLive.read; then goLive.settle(row.type_id, row.go_live_in)
 */
export class NextGoLives implements ChangeHandlers {
  readonly #known = new Map<string, { typeId: number; at: number }>()
  #listening = false
  /** Counts every notified write and every loss: a statement read while it moved may have missed one. */
  #epoch = 0

  before(type: string): GoLiveRead {
    const startedAt = performance.now()
    const epoch = this.#epoch
    const listening = this.#listening
    let kept = listening ? this.#known.get(type) : undefined
    if (kept !== undefined && kept.at <= startedAt) {
      this.#known.delete(type)
      kept = undefined
    }
    if (kept !== undefined) {
      const { typeId, at } = kept
      // A type that is not the one remembered (a notification missed): true until now, and no longer.
      return {
        read: false,
        settle: (found) => {
          if (found === typeId) return at === Infinity ? null : (at - startedAt) / 1000
          this.#known.delete(type)
          return 0
        },
      }
    }
    return {
      read: true,
      settle: (typeId, seconds) => {
        if (listening && this.#listening && epoch === this.#epoch && typeId !== null) {
          if (this.#known.size >= MAX_TYPES) this.#known.clear()
          // From before the statement was sent: the moment is never later than the one the database counted from.
          this.#known.set(type, { typeId, at: seconds === null ? Infinity : startedAt + seconds * 1000 })
        }
        return seconds
      },
    }
  }

  onListening(): void {
    this.#epoch++
    this.#listening = true
  }

  onLost(): void {
    this.#listening = false
    this.#epoch++
    this.#known.clear()
  }

  onChange(change: Change): void {
    this.#epoch++
    if (change.typeIds === 'all') return this.#known.clear()
    for (const [type, kept] of this.#known) if (change.typeIds.has(kept.typeId)) this.#known.delete(type)
  }

  onLanguages(): void {}

  /** How many types are remembered, for the tests. */
  get size(): number {
    return this.#known.size
  }
}
