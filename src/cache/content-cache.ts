import { AnswerStore } from './answer-store'
import type { Change, ChangeHandlers, LanguageSet } from './change-listener'

/** Whether the service's cache answered (C34). */
export type CacheStatus = 'HIT' | 'MISS' | 'BYPASS'

/** What a load gives the cache to keep. */
export interface Loaded<Value> {
  value: Value
  /** An estimate of the memory the value holds. */
  bytes: number
  /** The content type the answer belongs to; null when it does not exist. */
  typeId: number | null
  /** Milliseconds until the type's next go-live, from the start of the statement (C36); Infinity when none. */
  expiresInMs: number
  /** The language the database resolved; the answer is kept only under the key of that language. */
  language: string | null
}

export interface CachedRead<Value> {
  value: Value
  status: CacheStatus
  /** Seconds since the answer was computed (the `Age` header on hits). */
  ageSeconds: number
  /** performance.now() at which the answer stops being true; Infinity when no go-live is ahead. */
  expiresAt: number
}

/**
 * The service's cache of content answers (C35–C38). Answers come from memory
 * only while the database's change notifications are heard: the change
 * listener drops what a write can have changed, and an answer whose
 * statement was running when a change arrived is never kept, so no answer
 * computed before a commit is served once its notification is in (C36).
 * Concurrent misses of one key share one statement (C37).
 * @example const read = await cache.read(key, language, () => loadAnswer())
 */
export class ContentCache<Value> implements ChangeHandlers {
  readonly #store: AnswerStore<Value>
  /** Counts changes (and losses of the listener); a statement remembers the count it started at. */
  #epoch = 0
  #everythingChangedAt = 0
  #typeChangedAt = new Map<number, number>()
  #listening = false
  #languages: LanguageSet | null = null
  #inFlight = new Map<string, { epoch: number; read: Promise<CachedRead<Value>> }>()

  constructor(maxBytes: number) {
    this.#store = new AnswerStore<Value>(maxBytes)
  }

  /**
   * The language a request resolves to (C9), for its key; null while the
   * configured languages are not known (the request then bypasses the cache).
   */
  resolveLanguage(requested: string | undefined): string | null {
    const languages = this.#languages
    if (!this.#listening || languages === null || languages.defaultCode === null) return null
    return requested !== undefined && languages.codes.has(requested) ? requested : languages.defaultCode
  }

  /**
   * The answer under `key` from memory, or from `load` (once for all concurrent
   * misses), kept when nothing it depends on changed while it was computed.
   * `language` is the key's resolved language; null bypasses the cache.
   */
  async read(key: string, language: string | null, load: () => Promise<Loaded<Value>>): Promise<CachedRead<Value>> {
    if (language === null || !this.#listening) {
      const startedAt = performance.now()
      const loaded = await load()
      return { value: loaded.value, status: 'BYPASS', ageSeconds: 0, expiresAt: startedAt + loaded.expiresInMs }
    }
    const now = performance.now()
    const stored = this.#store.get(key, now)
    if (stored) return { value: stored.value, status: 'HIT', ageSeconds: Math.floor((now - stored.storedAt) / 1000), expiresAt: stored.expiresAt }
    const flight = this.#inFlight.get(key)
    // Joining a statement that started before a change would serve what the change replaced.
    if (flight && flight.epoch === this.#epoch) return flight.read
    const epoch = this.#epoch
    const read = this.#loadAndKeep(key, language, epoch, load)
    this.#inFlight.set(key, { epoch, read })
    try {
      return await read
    } finally {
      if (this.#inFlight.get(key)?.read === read) this.#inFlight.delete(key)
    }
  }

  async #loadAndKeep(key: string, language: string, epoch: number, load: () => Promise<Loaded<Value>>): Promise<CachedRead<Value>> {
    const startedAt = performance.now()
    const loaded = await load()
    const expiresAt = startedAt + loaded.expiresInMs
    const changed = Math.max(this.#everythingChangedAt, loaded.typeId === null ? 0 : (this.#typeChangedAt.get(loaded.typeId) ?? 0))
    if (changed <= epoch && this.#listening && loaded.language === language) {
      this.#store.set(key, { value: loaded.value, bytes: loaded.bytes, typeId: loaded.typeId, storedAt: startedAt, expiresAt })
    }
    return { value: loaded.value, status: 'MISS', ageSeconds: 0, expiresAt }
  }

  onListening(languages: LanguageSet): void {
    // Anything may have changed while nobody listened.
    this.#everythingChanged()
    this.#languages = languages
    this.#listening = true
  }

  onLost(): void {
    this.#listening = false
    this.#everythingChanged()
  }

  onChange(change: Change): void {
    if (change.table === 'languages') this.#languages = null
    if (change.typeIds === 'all') return this.#everythingChanged()
    this.#epoch++
    for (const typeId of change.typeIds) this.#typeChangedAt.set(typeId, this.#epoch)
    this.#store.dropTypes(change.typeIds)
  }

  onLanguages(languages: LanguageSet): void {
    this.#languages = languages
  }

  /** What the cache holds, for the benchmark and the tests. */
  get stats(): { answers: number; bytes: number; listening: boolean } {
    return { answers: this.#store.size, bytes: this.#store.bytes, listening: this.#listening }
  }

  #everythingChanged(): void {
    this.#epoch++
    this.#everythingChangedAt = this.#epoch
    this.#typeChangedAt.clear()
    this.#store.clear()
  }
}
