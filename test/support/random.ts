/**
 * A seeded pseudo-random generator (mulberry32): generated test data that is
 * the same on every run, so that a failure can be replayed.
 * @example const rng = random(42); rng.pick(['a', 'b']); rng.next() // in [0, 1)
 */
export function random(seed: number) {
  let state = seed
  const next = () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] }
}
