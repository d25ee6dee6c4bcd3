/**
 * The search benchmark's database (bench/search-dataset.sql), built once on the
 * server and kept: `vitrine_bench_search_<size>`. It is built at the schema
 * before C55 (the migrations up to 0007), loaded, then migrated the rest of the
 * way, as a site upgrading would be: the backfill of the search documents
 * (0008) is timed on the real thing. A kept database is only migrated.
 */
import { createHash } from 'node:crypto'
import { rmSync } from 'node:fs'
import { copyFile, mkdtemp, readdir, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { buildOnce } from './dataset'
import { migrate, MIGRATIONS_DIR } from '../src/db/migrate'

/** The last migration before the search documents of C55. */
const BEFORE_SEARCH_DOCUMENTS = '0007_term_lists.sql'

/**
 * @example const { url } = await ensureSearchDatabase(admin, target.url, 1_000_000)
 */
export async function ensureSearchDatabase(admin: Sql, serverUrl: string, size: number, { migrateAll = true } = {}): Promise<{ url: string; how: string; bytes: number; migrated: string[]; migrateMs: number }> {
  if (!Number.isSafeInteger(size) || size < 1000) throw new Error(`The search data set needs a whole number of entries ≥ 1000, not ${size}.`)
  const name = `vitrine_bench_search_${size}`
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString()
  const dataset = (await readFile(join(import.meta.dir, 'search-dataset.sql'), 'utf8')).replace(/:entries\b/g, String(size))
  const fingerprint = `vitrine-bench-search ${createHash('sha256').update(dataset).digest('hex')}`
  const how = await buildOnce(admin, url, fingerprint, async (sql) => {
    await migrate(sql, await migrationsUpTo(BEFORE_SEARCH_DOCUMENTS))
    await sql.unsafe("set maintenance_work_mem = '1GB'")
    // The GIN index is built once after the rows: a million inserts into it take far longer.
    await sql.unsafe('drop index entry_translations_search')
    await sql.unsafe(dataset)
    await sql.unsafe('create index entry_translations_search on entry_translations using gin (search_document)')
  })
  let migrated: string[] = []
  let migrateMs = 0
  if (migrateAll) {
    const sql = connectDatabase(url, { max: 1 })
    try {
      const started = performance.now()
      await sql.unsafe("set maintenance_work_mem = '1GB'")
      migrated = await migrate(sql)
      migrateMs = performance.now() - started
      if (migrated.length > 0) await sql.unsafe('vacuum analyze')
    } finally {
      await sql.end()
    }
  }
  const [{ bytes }] = await admin<{ bytes: number }[]>`select pg_database_size(${name}) as bytes`
  return { url, how, bytes, migrated, migrateMs }
}

/** A directory holding the migrations up to `last`, inclusive. */
async function migrationsUpTo(last: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vitrine-migrations-'))
  for (const file of (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql') && file <= last)) await copyFile(join(MIGRATIONS_DIR, file), join(dir, file))
  // Synchronously: an 'exit' handler's promises never settle, and the folder stayed behind.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

if (import.meta.main) {
  const admin = connectDatabase(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1 })
  const result = await ensureSearchDatabase(admin, process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', Number(process.env.BENCH_SEARCH_SIZE ?? 1_000_000), { migrateAll: process.env.MIGRATE_ALL !== '0' })
  console.log(result)
  await admin.end()
}
