import { ANY_TYPE, AnswerStore, type AnswerTypes, type StoredAnswer } from './answer-store'
import type { Change, ChangeHandlers, LanguageSet } from './change-listener'
import { Variants } from './variants'
import { HttpError } from '../http/errors'

/** Outputs kept per answer (C38): a header with a new value on every request churns these. */
const VARIANTS_PER_ANSWER = 32
/** The share of the cache one answer's outputs may take, so that their churn never evicts the rest. */
const VARIANTS_SHARE = 1 / 8
/** Request targets that lead to one answer, looked up before any parsing. */
const TARGETS_PER_ANSWER = 16
/** What a kept request target costs besides its characters. */
const TARGET_BYTES = 96

/** The language of an answer that has none (the discovery routes): kept whatever languages are configured. */
export const ANY_LANGUAGE = '*'

/** Whether the service's cache answered (C34). */
export type CacheStatus = 'HIT' | 'MISS' | 'BYPASS'

/** What a load gives the cache to keep. */
export interface Loaded<Value> {
  value: Value
  /** An estimate of the memory the value holds. */
  bytes: number
  /** The content type the answer belongs to; ANY_TYPE when it counts every type's entries; null when it depends on no type (a type that does not exist). */
  typeId: AnswerTypes
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
  /** Where the answer is kept, for `keep`; null when it is not (BYPASS, or changed while it was loaded). */
  place: Place<Value, unknown> | null
}

/** What the store holds under a key: the answer, the outputs computed from it, and the request targets that lead to it. */
interface Kept<Value, Output> {
  value: Value
  variants: Variants<Output>
  targets: string[]
}

interface Place<Value, Output> {
  key: string
  stored: StoredAnswer<Kept<Value, Output>>
}

/** A kept output found for a request, with its answer's times. */
export interface KeptOutput<Output> {
  output: Output
  /** performance.now() when the answer was computed. */
  storedAt: number
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
export class ContentCache<Value, Output = unknown> implements ChangeHandlers {
  readonly #store: AnswerStore<Kept<Value, Output>>
  /** Request target → where the answer it led to is kept, while that answer is kept. */
  readonly #targets = new Map<string, Place<Value, Output>>()
  /** Counts changes (and losses of the listener); a statement remembers the count it started at. */
  #epoch = 0
  #everythingChangedAt = 0
  #typeChangedAt = new Map<number, number>()
  /** The epoch of the latest change of any content type. */
  #anyTypeChangedAt = 0
  #listening = false
  #languages: LanguageSet | null = null
  #inFlight = new Map<string, { epoch: number; read: Promise<CachedRead<Value>> }>()

  constructor(readonly maxBytes: number) {
    this.#store = new AnswerStore<Kept<Value, Output>>(maxBytes, (_key, stored) => {
      for (const target of stored.value.targets) {
        if (this.#targets.get(target)?.stored === stored) this.#targets.delete(target)
      }
    })
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
   * `language` is the key's resolved language (ANY_LANGUAGE for an answer
   * that has none); null bypasses the cache. A key names one kind of answer
   * (it starts with its route), so the value kept under it is of the kind
   * `load` makes.
   */
  async read<Kind extends Value>(key: string, language: string | null, load: () => Promise<Loaded<Kind>>): Promise<CachedRead<Kind>> {
    return (await this.#read(key, language, load)) as CachedRead<Kind>
  }

  async #read(key: string, language: string | null, load: () => Promise<Loaded<Value>>): Promise<CachedRead<Value>> {
    if (language === null || !this.#listening) {
      const startedAt = performance.now()
      const loaded = await load()
      return { value: loaded.value, status: 'BYPASS', ageSeconds: 0, expiresAt: startedAt + loaded.expiresInMs, place: null }
    }
    const now = performance.now()
    const stored = this.#store.get(key, now)
    if (stored) {
      return { value: stored.value.value, status: 'HIT', ageSeconds: Math.floor((now - stored.storedAt) / 1000), expiresAt: stored.expiresAt, place: { key, stored } }
    }
    const flight = this.#inFlight.get(key)
    // Joining a statement that started before a change would serve what the change replaced.
    if (flight && flight.epoch === this.#epoch) {
      return flight.read.catch((error: unknown) => {
        // A 429 refused the client that started the statement (C52's heavy quota), not this one: it loads its own.
        if (error instanceof HttpError && error.status === 429) return this.#read(key, language, load)
        throw error
      })
    }
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
    const typeChangedAt = loaded.typeId === null ? 0 : loaded.typeId === ANY_TYPE ? this.#anyTypeChangedAt : (this.#typeChangedAt.get(loaded.typeId) ?? 0)
    const changed = Math.max(this.#everythingChangedAt, typeChangedAt)
    let place: Place<Value, Output> | null = null
    if (changed <= epoch && this.#listening && loaded.language === language) {
      const kept = { value: loaded.value, variants: new Variants<Output>(VARIANTS_PER_ANSWER, this.maxBytes * VARIANTS_SHARE), targets: [] }
      const stored = { value: kept, bytes: loaded.bytes, typeId: loaded.typeId, storedAt: startedAt, expiresAt }
      this.#store.set(key, stored)
      place = { key, stored }
    }
    return { value: loaded.value, status: 'MISS', ageSeconds: 0, expiresAt, place }
  }

  /**
   * Keeps what was computed from `read`'s answer for a request (C38): its
   * output, for the values it read of the request, and the request's target,
   * so that the same target finds it before any parsing. Nothing is kept when
   * the answer is no longer (a change dropped it: C36 holds for outputs as for
   * answers). Outputs count against the cache's bound.
   */
  keep(read: CachedRead<Value>, target: string, names: readonly string[], values: readonly (string | null)[], output: Output, bytes: number): void {
    const place = read.place as Place<Value, Output> | null
    if (place === null || !this.#listening || !this.#store.holds(place.key, place.stored)) return
    const { key, stored } = place
    let grown = 0
    const kept = stored.value
    if (this.#targets.get(target)?.stored !== stored) {
      // The oldest target out: junk query strings never keep a page's own URL from its outputs.
      if (kept.targets.length >= TARGETS_PER_ANSWER) {
        const oldest = kept.targets.shift()!
        if (this.#targets.get(oldest)?.stored === stored) this.#targets.delete(oldest)
        grown -= oldest.length * 2 + TARGET_BYTES
      }
      kept.targets.push(target)
      this.#targets.set(target, place)
      grown += target.length * 2 + TARGET_BYTES
    }
    grown += kept.variants.add(names, values, output, bytes)
    this.#store.grow(key, stored, grown)
  }

  /**
   * The output kept for a request target and the values the request gives
   * what that output read, from memory only; undefined when there is none
   * (the request then takes the whole way).
   * @example cache.lookup('/api/v1/content/post?page=2', (name) => readOf(request, name))
   */
  lookup(target: string, valueOf: (name: string) => string | null): KeptOutput<Output> | undefined {
    if (!this.#listening) return undefined
    const place = this.#targets.get(target)
    if (place === undefined) return undefined
    const stored = this.#store.get(place.key)
    if (stored !== place.stored) return undefined
    const output = stored.value.variants.find(valueOf)
    return output === undefined ? undefined : { output, storedAt: stored.storedAt, expiresAt: stored.expiresAt }
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
    this.#anyTypeChangedAt = this.#epoch
    for (const typeId of change.typeIds) this.#typeChangedAt.set(typeId, this.#epoch)
    this.#store.dropTypes(change.typeIds)
  }

  onLanguages(languages: LanguageSet): void {
    this.#languages = languages
  }

  /** What the cache holds, for the benchmark and the tests. */
  get stats(): { answers: number; bytes: number; targets: number; listening: boolean } {
    return { answers: this.#store.size, bytes: this.#store.bytes, targets: this.#targets.size, listening: this.#listening }
  }

  #everythingChanged(): void {
    this.#epoch++
    this.#everythingChangedAt = this.#epoch
    this.#typeChangedAt.clear()
    this.#store.clear()
    this.#targets.clear()
  }
}
