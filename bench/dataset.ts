/**
 * The benchmark's data set (large-dataset.sql) at a chosen number of entries:
 * bench/run.ts builds it at 100 000, bench/sizes.ts at each of BENCH_SIZES.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Where the file says how many entries to make; psql fills the same placeholder from `-v entries=…`. */
const ENTRIES_PLACEHOLDER = /:entries\b/g

/**
 * The text of large-dataset.sql making `entries` entries, ready for `sql.unsafe` (trusted text: our file and a whole number).
 * @example await sql.unsafe(await datasetSql(100_000))
 */
export async function datasetSql(entries: number): Promise<string> {
  if (!Number.isSafeInteger(entries) || entries < 1) throw new Error(`The data set needs a whole number of entries, not ${entries}.`)
  const template = await readFile(join(import.meta.dir, 'large-dataset.sql'), 'utf8')
  const filled = template.replace(ENTRIES_PLACEHOLDER, String(entries))
  // A file that lost its placeholder would build its own literal size whatever was asked.
  if (filled === template) throw new Error('bench/large-dataset.sql has no `:entries` placeholder.')
  return filled
}
