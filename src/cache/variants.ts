/**
 * The outputs kept for one answer, one per set of values of what computing it
 * read of the request (C38). An output is kept with the names it read, in the
 * order first read, and their values: a request gets it when it gives every
 * one of those names the same value. A computation that reads the same names
 * for the same values is the same computation, so at most one kept output
 * matches a request. Bounded in number and in bytes: the least recently used
 * goes first, so that a header with a new value on every request churns this
 * answer's outputs, within their share of the cache, and nothing else.
 * @example const variants = new Variants<Body>(32, 8 * 1024 * 1024); variants.add(['header:x-member'], ['1'], body, 4096); variants.find((name) => request.headers.get(name.slice(7)))
 */
export class Variants<Output> {
  /** By names and values; a Map keeps insertion order: re-inserting on a find makes the first the least recently used. */
  #kept = new Map<string, { signature: string; output: Output; bytes: number }>()
  /** The distinct lists of names read, with how many kept outputs read each (and, for an empty list, its one key). */
  #signatures = new Map<string, { names: readonly string[]; count: number; onlyKey: string | null }>()
  #bytes = 0

  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
  ) {}

  /** The output kept for the values `valueOf` gives, if any. */
  find(valueOf: (name: string) => string | null): Output | undefined {
    for (const [signature, { names, onlyKey }] of this.#signatures) {
      const key = onlyKey ?? keyOf(signature, names.map(valueOf))
      const kept = this.#kept.get(key)
      if (kept === undefined) continue
      // The most recently used now (nothing to reorder when it is the only one: an answer no callback varies).
      if (this.#kept.size > 1) {
        this.#kept.delete(key)
        this.#kept.set(key, kept)
      }
      return kept.output
    }
    return undefined
  }

  /**
   * Keeps `output` for these values of these names (replacing one kept for the
   * same), and returns by how many bytes this set grew (negative when it shrank).
   */
  add(names: readonly string[], values: readonly (string | null)[], output: Output, bytes: number): number {
    const before = this.#bytes
    const signature = JSON.stringify(names)
    const key = keyOf(signature, values)
    this.#remove(key)
    this.#kept.set(key, { signature, output, bytes })
    this.#bytes += bytes
    const known = this.#signatures.get(signature)
    if (known) known.count++
    else this.#signatures.set(signature, { names: [...names], count: 1, onlyKey: names.length === 0 ? key : null })
    // An output larger than the whole share is not kept at all.
    for (const oldest of this.#kept.keys()) {
      if (this.#kept.size <= this.maxCount && this.#bytes <= this.maxBytes) break
      this.#remove(oldest)
    }
    return this.#bytes - before
  }

  get size(): number {
    return this.#kept.size
  }

  get bytes(): number {
    return this.#bytes
  }

  #remove(key: string): void {
    const kept = this.#kept.get(key)
    if (kept === undefined) return
    this.#kept.delete(key)
    this.#bytes -= kept.bytes
    const signature = this.#signatures.get(kept.signature)!
    if (--signature.count === 0) this.#signatures.delete(kept.signature)
  }
}

function keyOf(signature: string, values: readonly (string | null)[]): string {
  return `${signature}\u0000${JSON.stringify(values)}`
}
