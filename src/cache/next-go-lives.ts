import type { Config } from '../config'
import type { Change, ChangeHandlers } from './change-listener'

/** Types remembered at most: only existing types are, so this bounds nothing a site has, only a flood of renames. */
const MAX_TYPES = 10_000

/**
 * The longest a go-live is trusted without reading it again, whatever its moment: a notification
 * that never came, or a process clock that stood still while the machine was suspended, is then
 * outlived within this (one more subquery per type a minute).
 */
const TRUSTED_MS = 60_000

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

/** A type's next go-live as a statement read it. */
interface Remembered {
  typeId: number
  /** performance.now() of the go-live; Infinity: none. */
  at: number
  /** performance.now() after which it is read again anyway (TRUSTED_MS). */
  until: number
}

/**
 * The go-lives a service remembers: with CACHE_MAX_AGE 0 (the default), when no
 * cache in front keeps an answer for a time, only revalidates it; otherwise none,
 * and every statement reads its type's (see NextGoLives).
 * @example const goLives = goLivesFor(config)
 */
export function goLivesFor(config: Pick<Config, 'cacheMaxAge'>): NextGoLives | undefined {
  return config.cacheMaxAge === 0 ? new NextGoLives() : undefined
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
 * (the next go-live after it is read again), after TRUSTED_MS, when the
 * listener is lost, and whenever a write was notified while the statement
 * that read it ran (its snapshot may predate the write); an answer that used
 * it while its type was written expires at once. Keyed by the type's slug, as
 * requests name it, with its id, as notifications name it; an unknown type is
 * never remembered (creating it would be notified under an id nothing holds).
 *
 * Only for a service whose answers no cache in front keeps for a time
 * (`goLivesFor`): a write committed just before a statement, and heard just
 * after it, is in the statement's rows but not in what was remembered. The
 * service's own cache drops that answer when the write is heard; a max-age
 * sent with it could not be taken back.
 * @example const goLive = goLives.before('post'); // the statement reads the go-live when goLive.read; then goLive.settle(row.type_id, row.go_live_in)
 */
export class NextGoLives implements ChangeHandlers {
  readonly #known = new Map<string, Remembered>()
  #listening = false
  /** Counts every notified write and every loss: a statement read while it moved may have missed one. */
  #epoch = 0

  /** `trustedMs`: TRUSTED_MS, shorter under test. */
  constructor(private readonly trustedMs = TRUSTED_MS) {}

  before(type: string): GoLiveRead {
    const startedAt = performance.now()
    const epoch = this.#epoch
    const listening = this.#listening
    let kept = listening ? this.#known.get(type) : undefined
    if (kept !== undefined && (kept.at <= startedAt || kept.until <= startedAt)) {
      this.#known.delete(type)
      kept = undefined
    }
    if (kept !== undefined) {
      const remembered = kept
      return {
        read: false,
        settle: (found) => {
          // Still remembered: no write to the type was heard while the statement ran.
          if (found === remembered.typeId && this.#known.get(type) === remembered) return remembered.at === Infinity ? null : (remembered.at - startedAt) / 1000
          // A write heard meanwhile (its rows may be in the answer), or a type that is not the one remembered (a notification missed): true until now, and no longer.
          if (this.#known.get(type) === remembered) this.#known.delete(type)
          return 0
        },
      }
    }
    return {
      read: true,
      settle: (typeId, seconds) => {
        // Losing the listener moves the epoch too: unchanged, it was heard throughout.
        if (listening && epoch === this.#epoch && typeId !== null) {
          if (this.#known.size >= MAX_TYPES) this.#known.clear()
          // From before the statement was sent: the moment is never later than the one the database counted from.
          this.#known.set(type, { typeId, at: seconds === null ? Infinity : startedAt + seconds * 1000, until: startedAt + this.trustedMs })
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
