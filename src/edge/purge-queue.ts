import type { PurgeTarget } from '../config'
import { recordPurgeRequest } from '../metrics/families'
import type { Logger } from '../log'
import { purgeBatches, sendPurge, targetName, type PurgeApis } from './purge-targets'

/** After a failure, the next try: doubling from this, up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 50
/** C51: once the endpoint answers again, a purge waits at most a second. */
const MAX_BACKOFF_MS = 1000

/** Purge requests per target and outcome: `vitrine_purge_requests_total{target,outcome}` of the metrics to come (C53). */
export type PurgeRequestCounts = Map<string, { acknowledged: number; failed: number }>

export interface PurgeQueueOptions {
  apis: PurgeApis
  log: Logger
  /** How long keys wait for others before they are sent (0: the next turn of the event loop; keys told while a batch is in flight wait for it anyway). */
  coalesceMs: number
  /** Past this many pending keys, they collapse into `collapse()`. */
  maxPendingKeys: number
  /** The keys that stand for every answer (every type's key and the discovery keys). */
  collapse(): string[]
  counts: PurgeRequestCounts
}

/**
 * The keys waiting to be purged at one target (C51), sent in batches: at
 * once when the target is idle, else together once the batch in flight is answered. A batch that fails goes back into the
 * pending keys, with everything after it, and is tried again with backoff: no
 * purge is lost, and one target down never holds the others back.
 * @example const queue = new PurgeQueue(target, options); queue.add(['entry-42', 'lists-post'])
 */
export class PurgeQueue {
  readonly name: string
  readonly #pending = new Set<string>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #sending = false
  /** Keys of the batches being sent, not yet acknowledged. */
  #sendingKeys = 0
  #failures = 0
  #closed = false

  /**
   * @param metricLabel the target's label in `vitrine_purge_requests_total` (C53: never a URL): its kind and
   *   its place in PURGE_URLS, `xkey-0`.
   */
  constructor(
    readonly target: PurgeTarget,
    readonly options: PurgeQueueOptions,
    readonly metricLabel = `${target.kind}-0`,
  ) {
    this.name = targetName(target)
    options.counts.set(this.name, { acknowledged: 0, failed: 0 })
  }

  /** Keys waiting, sent or not yet acknowledged: `vitrine_purge_pending_keys`. */
  get pendingKeys(): number {
    return this.#pending.size + this.#sendingKeys
  }

  add(keys: Iterable<string>): void {
    this.#keep(keys)
    this.#schedule(this.options.coalesceMs)
  }

  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
  }

  #keep(keys: Iterable<string>): void {
    for (const key of keys) this.#pending.add(key)
    if (this.#pending.size > this.options.maxPendingKeys) {
      // Kept type keys stay: a type deleted meanwhile is no longer among the collapsed ones.
      const typeKeys = [...this.#pending].filter((key) => key.startsWith('type-'))
      this.#pending.clear()
      for (const key of [...this.options.collapse(), ...typeKeys]) this.#pending.add(key)
    }
  }

  #schedule(ms: number): void {
    if (this.#sending || this.#timer !== undefined || this.#closed) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.#flush()
    }, ms)
  }

  async #flush(): Promise<void> {
    if (this.#pending.size === 0) return
    this.#sending = true
    const batches = purgeBatches(this.target, [...this.#pending])
    this.#sendingKeys = this.#pending.size
    this.#pending.clear()
    const counts = this.options.counts.get(this.name)!
    let unsent: string[] = []
    for (const [index, batch] of batches.entries()) {
      try {
        await sendPurge(this.target, batch, this.options.apis)
        counts.acknowledged++
        recordPurgeRequest(this.metricLabel, 'ok')
        this.#sendingKeys -= batch.length
      } catch (error) {
        counts.failed++
        recordPurgeRequest(this.metricLabel, 'failed')
        unsent = batches.slice(index).flat()
        if (this.#failures === 0) this.options.log.warn('edge purge failed; retrying until it is acknowledged', { target: this.name, error })
        break
      }
    }
    this.#sendingKeys = 0
    this.#keep(unsent)
    this.#sending = false
    if (unsent.length > 0) {
      this.#failures++
      this.#schedule(Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.#failures - 1)))
      return
    }
    if (this.#failures > 0) this.options.log.info('edge purge acknowledged again', { target: this.name, failures: this.#failures })
    this.#failures = 0
    if (this.#pending.size > 0) this.#schedule(this.options.coalesceMs)
  }
}
