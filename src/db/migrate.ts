import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Sql } from './connect'

export const MIGRATIONS_DIR = join(import.meta.dir, '..', '..', 'sql', 'migrations')

/** Any fixed number: instances running `migrate` at once queue on this lock. */
const MIGRATION_LOCK = 7_317_001

/**
 * Applies the pending `sql/migrations/*.sql` files in name order, each recorded
 * in `schema_migrations`. The whole run is one transaction behind an advisory
 * lock, so concurrent runs wait for each other and then find nothing to do.
 * @example const applied = await migrate(sql) // ['0001_content_schema.sql']
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await migrationFiles(dir)
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx`
      create table if not exists schema_migrations (
        name text primary key,
        applied_at timestamptz not null default now()
      )
    `
    const done = new Set((await tx<{ name: string }[]>`select name from schema_migrations`).map((row) => row.name))
    const pending = files.filter((name) => !done.has(name))
    for (const name of pending) {
      // Trusted text: a file shipped with the service.
      await tx.unsafe(await readFile(join(dir, name), 'utf8'))
      await tx`insert into schema_migrations (name) values (${name})`
    }
    return pending
  })
}

/** The migrations that exist on disk but have not been applied. */
export async function pendingMigrations(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await migrationFiles(dir)
  const [{ exists }] = await sql<{ exists: boolean }[]>`select to_regclass('schema_migrations') is not null as exists`
  if (!exists) return files
  const done = new Set((await sql<{ name: string }[]>`select name from schema_migrations`).map((row) => row.name))
  return files.filter((name) => !done.has(name))
}

/** The files ship with the service and do not change while it runs: /readyz need not list them on every probe. */
const listed = new Map<string, Promise<string[]>>()

function migrationFiles(dir: string): Promise<string[]> {
  if (!listed.has(dir)) {
    const files = readdir(dir).then((names) => names.filter((name) => name.endsWith('.sql')).sort())
    files.catch(() => listed.delete(dir))
    listed.set(dir, files)
  }
  return listed.get(dir)!
}
