/**
 * C52's token buckets, every client's in one bounded store. A bucket holds
 * `quota` units and gains `quota / window` a second. It is kept as the time
 * at which it will be full again (`fullAt`): a full bucket is the same as no
 * bucket, so a client whose buckets are all full is forgotten.
 *
 * Memory: clients are kept in least-recently-used order. Every eighth use
 * forgets up to sixteen of the oldest when they are full (a bucket untouched
 * for a window is full): two a use, so idle clients leave as others come. Past `maxClients`, the
 * client silent the longest is forgotten even if its bucket is not full:
 * refusing newcomers instead would let a flood of addresses lock every new
 * client out, and forgetting gives that client back at most one quota, which
 * is what any new address gets anyway; an active client is never the oldest.
 */

/** The two quotas of C52. */
export type Policy = 'requests' | 'heavy'

/** A quota: `quota` units per `windowSeconds`. */
export interface Quota {
  quota: number
  windowSeconds: number
}

/** One client's buckets: when each will be full again (performance.now() milliseconds). */
export interface ClientBuckets {
  requests: number
  heavy: number
}

/** A bucket after a request: units left and seconds until full (C52's r and t), or how long until a unit is back. */
export interface BucketState {
  /** Whole units left. */
  remaining: number
  /** Whole seconds until the bucket is full again. */
  fullInSeconds: number
}

/** The most clients one process remembers: about 160 bytes each, 16 MB at most. */
export const MAX_CLIENTS = 100_000

/** Clients forgotten per use when they are full: more than one, so that the store shrinks while clients come and go. */
const SWEEP_PER_USE = 2
/** The sweep runs every this many uses, for as many clients as those uses would have swept: one walk of the oldest instead of eight. */
const SWEEP_EVERY = 8

export class TokenBuckets {
  readonly #clients = new Map<string, ClientBuckets>()
  readonly #unitMs: Record<Policy, number>
  readonly #windowMs: number
  /** The client used last (the last in the order). */
  #newest: string | undefined
  #uses = 0

  constructor(
    quotas: Record<Policy, number>,
    windowSeconds: number,
    readonly maxClients = MAX_CLIENTS,
  ) {
    this.#windowMs = windowSeconds * 1000
    this.#unitMs = { requests: this.#windowMs / Math.max(1, quotas.requests), heavy: this.#windowMs / Math.max(1, quotas.heavy) }
  }

  /** Clients remembered now. */
  get size(): number {
    return this.#clients.size
  }

  /**
   * The client's buckets, as the most recently used; a new client's are full.
   * @example const buckets = store.of('192.0.2.1', performance.now())
   */
  of(client: string, now: number): ClientBuckets {
    let buckets = this.#clients.get(client)
    // The most recently used already: nothing to reorder (one busy client, request after request).
    if (buckets !== undefined && client === this.#newest) return buckets
    if (buckets !== undefined) this.#clients.delete(client)
    else buckets = { requests: now, heavy: now }
    if (++this.#uses % SWEEP_EVERY === 0 || this.#clients.size >= this.maxClients) this.#forgetOldest(now, SWEEP_PER_USE * SWEEP_EVERY)
    this.#clients.set(client, buckets)
    this.#newest = client
    return buckets
  }

  /**
   * Takes one unit of `policy` from `buckets`, when a whole one is there;
   * false (and nothing taken) otherwise.
   */
  take(buckets: ClientBuckets, policy: Policy, now: number): boolean {
    const debt = Math.max(0, buckets[policy] - now) + this.#unitMs[policy]
    // A thousandth of a millisecond of slack: float sums of units must not refuse a unit that is back.
    if (debt > this.#windowMs + 1e-3) return false
    buckets[policy] = now + debt
    return true
  }

  /** Gives back a unit taken for a request that got no answer but a 429 (C52: the 429 costs no unit). */
  giveBack(buckets: ClientBuckets, policy: Policy): void {
    buckets[policy] -= this.#unitMs[policy]
  }

  /**
   * C52's r and t for a bucket.
   * @example store.state(buckets, 'requests', performance.now()) // { remaining: 49, fullInSeconds: 1 }
   */
  state(buckets: ClientBuckets, policy: Policy, now: number): BucketState {
    const debt = Math.max(0, buckets[policy] - now)
    return { remaining: Math.max(0, Math.floor((this.#windowMs - debt) / this.#unitMs[policy] + 1e-6)), fullInSeconds: Math.max(0, Math.ceil(debt / 1000 - 1e-6)) }
  }

  /** Whole seconds until `policy` has a unit again, at least 1 (C52's Retry-After). */
  secondsUntilUnit(buckets: ClientBuckets, policy: Policy, now: number): number {
    const wait = Math.max(0, buckets[policy] - now) + this.#unitMs[policy] - this.#windowMs
    return Math.max(1, Math.ceil(wait / 1000 - 1e-6))
  }

  #forgetOldest(now: number, sweep: number): void {
    let swept = 0
    for (const [client, buckets] of this.#clients) {
      if (this.#clients.size >= this.maxClients || (swept < sweep && buckets.requests <= now && buckets.heavy <= now)) {
        this.#clients.delete(client)
        swept++
      } else {
        return
      }
    }
  }
}
