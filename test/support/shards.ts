/**
 * How `bun run test` (../run.ts) deals the suite's files to its shards, and
 * reads back what each file took.
 */

/**
 * The files in `count` shards of about equal recorded time: longest first, each to the
 * shard with the least so far (a file not recorded counts as the median of those that are).
 * Never more shards than files (one, empty, when there is none).
 * @example dealFiles(['test/a.test.ts', 'test/b.test.ts'], { 'test/a.test.ts': 30 }, 2) // [['test/a.test.ts'], ['test/b.test.ts']]
 */
export function dealFiles(files: readonly string[], times: Readonly<Record<string, number>>, count: number): string[][] {
  const known = Object.values(times).sort((a, b) => a - b)
  const unknown = known.length ? known[Math.floor(known.length / 2)]! : 1
  const timeOf = (file: string) => times[file] ?? unknown
  const shards = Array.from({ length: Math.min(count, Math.max(1, files.length)) }, () => ({ seconds: 0, files: [] as string[] }))
  for (const file of [...files].sort((a, b) => timeOf(b) - timeOf(a) || a.localeCompare(b))) {
    // On a tie, the shard with fewer files: files recorded at 0 s are spread too.
    const lightest = shards.reduce((least, shard) => (shard.seconds < least.seconds || (shard.seconds === least.seconds && shard.files.length < least.files.length) ? shard : least))
    lightest.seconds += timeOf(file)
    lightest.files.push(file)
  }
  return shards.map((shard) => shard.files.sort())
}

/**
 * Each test file's time in seconds, to a tenth, from `bun test --reporter=junit` reports, sorted by file.
 * A file's own `<testsuite>`, named after it, holds its describes' time.
 * @example fileTimesOf(['<testsuite name="test/a.test.ts" file="test/a.test.ts" tests="2" time="1.26">']) // { 'test/a.test.ts': 1.3 }
 */
export function fileTimesOf(reports: readonly string[]): Record<string, number> {
  const times: Record<string, number> = {}
  for (const xml of reports) {
    for (const [, file, time] of xml.matchAll(/<testsuite name="([^"]+)" file="\1"[^>]*? time="([\d.]+)"/g)) times[file!] = Math.round(Number(time) * 10) / 10
  }
  return Object.fromEntries(Object.entries(times).sort(([a], [b]) => a.localeCompare(b)))
}
