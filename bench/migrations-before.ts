/**
 * The service's migrations before a given one, copied into a temporary
 * folder: a benchmark's "before" database (bench/guards.ts, bench/articles.ts)
 * migrates from it. The caller removes the folder.
 */
import { copyFile, mkdtemp, readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS_DIR } from '../src/db/migrate'

/** A folder holding the migrations whose names sort before `first` (`'0002'`: the data model alone). */
export async function migrationsBefore(first: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `vitrine-before-${first}-`))
  for (const file of (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql') && name < first)) await copyFile(join(MIGRATIONS_DIR, file), join(dir, file))
  return dir
}
