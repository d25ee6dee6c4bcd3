/**
 * `bun run bench:sync`, part of `bun run bench`: C48's targets. On a copy of
 * `vitrine_bench_100000` (bench/dataset.ts; the copy is made and dropped here:
 * bench/explain-sync.ts writes the changes it measures), EXPLAIN (ANALYZE,
 * BUFFERS) of a first sync page and of the first delta page after 10 and
 * after 10 000 changes, as the service runs them (a generic plan). Targets: a
 * delta after 10 changes ≤ 10 ms of statement; after 10 000 about what 10 000
 * items cost, never the type's size.
 *
 * DATABASE_URL: the server to keep the database on; unset: the embedded PostgreSQL under DATA_DIR.
 */
import { join } from 'node:path'
import { ensureBenchDatabase } from './dataset'
import { setUpBench } from './setup'

const COPY = 'vitrine_bench_sync_copy'
const { target, admin, close } = await setUpBench()
let code = 1
try {
  const database = await ensureBenchDatabase(admin, target.url, 100_000)
  const source = new URL(database.url).pathname.slice(1)
  await admin.unsafe(`drop database if exists ${COPY}`)
  await admin.unsafe(`create database ${COPY} template ${source}`)
  const url = new URL(database.url)
  url.pathname = `/${COPY}`
  const run = Bun.spawn(['bun', join(import.meta.dir, 'explain-sync.ts')], { env: { ...process.env, DATABASE_URL: url.toString(), DATABASE_TIMEOUT_MS: '120000' }, stdout: 'inherit', stderr: 'inherit' })
  code = await run.exited
} finally {
  await admin.unsafe(`drop database if exists ${COPY} with (force)`).catch(() => {})
  await close()
}
process.exit(code)
