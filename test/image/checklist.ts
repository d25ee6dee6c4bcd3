/**
 * The image test's checks, printed one a line as they pass; the first failure
 * ends the run (each check needs the ones before it). The closing line counts
 * them as CI reads it: "image: N passed, N failed".
 */
export class Checklist {
  passed = 0
  failed = 0

  /** Runs one check and returns what it found; a failure is printed and rethrown. */
  async check<T>(name: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now()
    let result: T
    try {
      result = await run()
    } catch (error) {
      this.failed++
      console.log(`  ✗ ${name}`)
      throw error
    }
    this.passed++
    console.log(`  ✓ ${name} (${seconds(started)} s)`)
    return result
  }

  summary(): string {
    return `image: ${this.passed} passed, ${this.failed} failed`
  }
}

/** Seconds since `started` (a performance.now() reading), to one decimal. */
export function seconds(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(1)
}
