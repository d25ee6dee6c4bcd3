import { recordCacheEviction } from '../metrics/families'

/**
 * A bounded store of content answers, least recently used out first, by
 * bytes. It knows nothing of HTTP or PostgreSQL: an answer is a value with a
 * size, the content type it belongs to, and the moment it stops being true
 * (the type's next go-live).
 */

/** An answer that counts the entries of every content type (the discovery routes): a change of any type drops it. */
export const ANY_TYPE = 'any'

/** What an answer depends on: one content type's id, every type (ANY_TYPE), or none but everything (null). */
export type AnswerTypes = number | typeof ANY_TYPE | null

export interface StoredAnswer<Value> {
  value: Value
  /** An estimate of the memory it holds, in bytes. */
  bytes: number
  /** The content type's id; ANY_TYPE; or null when the type does not exist (dropped only by a change of everything). */
  typeId: AnswerTypes
  /** performance.now() when it was stored. */
  storedAt: number
  /** performance.now() at which it stops being true (the next go-live of its type), or Infinity. */
  expiresAt: number
}

/**
 * @example const store = new AnswerStore<Body>(64 * 1024 * 1024); store.set('k', answer); store.get('k')
 */
export class AnswerStore<Value> {
  // A Map keeps insertion order: re-inserting on a hit makes its first key the least recently used.
  #answers = new Map<string, StoredAnswer<Value>>()
  #bytes = 0

  /** `onRemove` hears of every answer that leaves, but for `clear()`. */
  constructor(
    readonly maxBytes: number,
    private readonly onRemove: (key: string, answer: StoredAnswer<Value>) => void = () => {},
  ) {}

  get(key: string, now = performance.now()): StoredAnswer<Value> | undefined {
    const answer = this.#answers.get(key)
    if (answer === undefined) return undefined
    if (now >= answer.expiresAt) {
      this.#remove(key, answer)
      return undefined
    }
    this.#answers.delete(key)
    this.#answers.set(key, answer)
    return answer
  }

  set(key: string, answer: StoredAnswer<Value>): void {
    const previous = this.#answers.get(key)
    if (previous) this.#remove(key, previous)
    // An answer larger than the whole store is not kept at all.
    if (answer.bytes > this.maxBytes) return
    this.#answers.set(key, answer)
    this.#bytes += answer.bytes
    this.#evict()
  }

  /** Whether `answer` is the one kept under `key`, as it is; the order of use is left as it is. */
  holds(key: string, answer: StoredAnswer<Value>): boolean {
    return this.#answers.get(key) === answer
  }

  /**
   * Counts `bytes` more (or fewer) for the answer under `key`, when it is still
   * `answer` (not dropped, expired or replaced since it was read), and evicts
   * the least recently used answers past the bound. False when it is not kept.
   */
  grow(key: string, answer: StoredAnswer<Value>, bytes: number): boolean {
    if (!this.holds(key, answer)) return false
    answer.bytes += bytes
    this.#bytes += bytes
    this.#evict()
    return this.holds(key, answer)
  }

  /** Drops the answers of these content types and of every type (a type that does not exist changes only with everything). */
  dropTypes(typeIds: ReadonlySet<number>): void {
    for (const [key, answer] of this.#answers) {
      if (answer.typeId === ANY_TYPE || (answer.typeId !== null && typeIds.has(answer.typeId))) this.#remove(key, answer)
    }
  }

  clear(): void {
    this.#answers.clear()
    this.#bytes = 0
  }

  get bytes(): number {
    return this.#bytes
  }

  get size(): number {
    return this.#answers.size
  }

  #evict(): void {
    for (const [oldest, stored] of this.#answers) {
      if (this.#bytes <= this.maxBytes) break
      this.#remove(oldest, stored)
      recordCacheEviction()
    }
  }

  #remove(key: string, answer: StoredAnswer<Value>): void {
    this.#answers.delete(key)
    this.#bytes -= answer.bytes
    this.onRemove(key, answer)
  }
}
