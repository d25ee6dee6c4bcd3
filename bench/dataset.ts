/**
 * The benchmark's data set (large-dataset.sql) at a chosen number of entries:
 * bench/run.ts builds it at 100 000, bench/sizes.ts at each of BENCH_SIZES,
 * bench/lanes.ts at 100 000 (the last two keep theirs: ensureBenchDatabase).
 */
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { migrate } from '../src/db/migrate'

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

/**
 * `vitrine_bench_<size>` on the server `serverUrl` that `admin` is connected to, built only when
 * its fingerprint differs from the one recorded on it: building a million entries takes minutes.
 * `manyTerms`: `vitrine_bench_terms_<size>`, the same data set with 10 000 tags (bench/many-terms.sql).
 * @example const { url } = await ensureBenchDatabase(admin, target.url, 100_000)
 */
export async function ensureBenchDatabase(admin: Sql, serverUrl: string, size: number, { manyTerms = false } = {}): Promise<{ url: string; how: string; bytes: number }> {
  const name = manyTerms ? `vitrine_bench_terms_${size}` : `vitrine_bench_${size}`
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString()
  const dataset = (await datasetSql(size)) + (manyTerms ? `\n${await readFile(join(import.meta.dir, 'many-terms.sql'), 'utf8')}` : '')
  const fingerprint = await fingerprintOf(dataset, size)
  const how = await buildOnce(admin, url, fingerprint, async (sql) => {
    await migrate(sql)
    await sql.unsafe(dataset)
  })
  const [{ bytes }] = await admin<{ bytes: number }[]>`select pg_database_size(${name}) as bytes`
  return { url, how, bytes }
}

/**
 * Builds the database of `url` with `build` unless the fingerprint recorded on it is
 * `fingerprint`; says which it did. After `build`: vacuum analyze and a checkpoint.
 * @example const how = await buildOnce(admin, url, fingerprint, (sql) => sql.unsafe(text))
 */
export async function buildOnce(admin: Sql, url: string, fingerprint: string, build: (sql: Sql) => Promise<unknown>): Promise<string> {
  const name = new URL(url).pathname.slice(1)
  const [found] = await admin<{ comment: string | null }[]>`
    select shobj_description(oid, 'pg_database') as comment
    from pg_database
    where datname = ${name}
  `
  if (found?.comment === fingerprint) return 'reused: its fingerprint matches'
  console.log(`Building ${name} (${found ? 'its fingerprint differs' : 'new'}) …`)
  const started = performance.now()
  // Trusted text here and below: the name is made of letters and a whole number, the fingerprint of hex digits.
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.unsafe(`create database ${name}`)
  const sql = connectDatabase(url, { max: 1 })
  try {
    await build(sql)
    await sql.unsafe('vacuum analyze')
    // Written out now, not by the checkpointer during the first measurements (2 GB at 1M: one
    // run measured page 1 at 0.68 of 10k right after a build, 0.95 alternating with 10k later).
    await sql.unsafe('checkpoint').catch((error) => console.log(`(no checkpoint after the build: ${error.message})`))
  } finally {
    await sql.end()
  }
  // Recorded last: a build cut short has none, so the next run builds again.
  await admin.unsafe(`comment on database ${name} is '${fingerprint}'`)
  console.log(`Built ${name} in ${((performance.now() - started) / 1000).toFixed(1)} s.`)
  return `built in ${((performance.now() - started) / 1000).toFixed(0)} s`
}

/** What a database's content follows from: the data set (its size in it), the size, and every migration file, names and texts. */
async function fingerprintOf(dataset: string, size: number): Promise<string> {
  const hash = createHash('sha256').update(dataset).update(`\0${size}\0`)
  const directory = join(import.meta.dir, '..', 'sql', 'migrations')
  for (const file of (await readdir(directory)).sort()) {
    hash.update(`${file}\0`).update(await readFile(join(directory, file))).update('\0')
  }
  return `vitrine-bench ${hash.digest('hex')}`
}
