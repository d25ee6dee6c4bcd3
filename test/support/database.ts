import { readFileSync, rmSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../../src/db/connect'
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/db/embedded'
import { migrate } from '../../src/db/migrate'
import { processRuns, whileRunning } from './leftovers'

/**
 * The PostgreSQL this test run uses: a fresh database on the server named by
 * TEST_DATABASE_URL when it is set, otherwise an embedded cluster in a
 * temporary folder. Test files take databases from a migrated template.
 */
interface Cluster {
  /** URL of a database we may connect to for administration. */
  adminUrl: string
  admin: Sql
  embedded?: EmbeddedDatabase
  dataDir?: string
  template: string
  created: string[]
}

const RUN = `vitrine_test_${process.pid}_${Date.now().toString(36)}`
let cluster: Cluster | undefined
let counter = 0

export async function provisionCluster(): Promise<void> {
  const serverUrl = process.env.TEST_DATABASE_URL
  let adminUrl: string
  let embedded: EmbeddedDatabase | undefined
  let dataDir: string | undefined
  if (serverUrl) {
    adminUrl = serverUrl
  } else {
    dataDir = await mkdtemp(join(tmpdir(), 'vitrine-test-'))
    await chmod(dataDir, 0o755)
    embedded = await startEmbeddedDatabase({ dataDir, preferredPort: 0 })
    adminUrl = embedded.url
  }
  const admin = connectDatabase(adminUrl, { max: 2 })
  if (embedded) {
    // A throwaway cluster need not survive a power cut: creating a database per test file is then much cheaper.
    for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await admin.unsafe(`alter system set ${setting} = off`)
    await admin`select pg_reload_conf()`
  }
  const template = `${RUN}_template`
  await admin.unsafe(`create database ${template}`)
  const templateSql = connectDatabase(databaseUrl(adminUrl, template), { max: 1 })
  await migrate(templateSql)
  await templateSql.end()
  cluster = { adminUrl, admin, embedded, dataDir, template, created: [template] }
}

/**
 * An embedded cluster goes as a whole. On a server, every database this run
 * created is dropped; one that cannot be is reported, never left behind unsaid.
 */
export function teardownCluster(): Promise<void> {
  // A signal's handler and the last hook may both call it (test/support/preload.ts): the second waits for the first.
  tearingDown ??= tearDown()
  return tearingDown
}

let tearingDown: Promise<void> | undefined

/**
 * The embedded cluster stopped (immediate shutdown) and removed at once, without giving up the thread:
 * for a signal's handler, while tests still run. bun test may end the run by itself meanwhile (a test
 * file failing at its top level, its cluster gone), and it does not wait for an asynchronous teardown.
 * False when the run uses a server: its databases need statements (teardownCluster).
 */
export function removeEmbeddedClusterNow(): boolean {
  const current = cluster
  if (!current?.embedded || !current.dataDir) return false
  cluster = undefined
  try {
    const pid = Number(readFileSync(join(current.embedded.clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    if (pid > 0) {
      process.kill(pid, 'SIGQUIT')
      for (const until = Date.now() + 10_000; Date.now() < until && processRuns(pid); ) Bun.sleepSync(20)
    }
  } catch {
    // No postmaster.pid (it has stopped), or ESRCH: it has exited.
  }
  rmSync(current.embedded.clusterDir, { recursive: true, force: true })
  rmSync(current.dataDir, { recursive: true, force: true })
  return true
}

async function tearDown(): Promise<void> {
  if (!cluster) return
  const { admin, created, embedded, dataDir } = cluster
  cluster = undefined
  const failures: string[] = []
  if (!embedded) {
    for (const name of created.reverse()) {
      await admin.unsafe(`drop database if exists ${name} with (force)`).catch((error: Error) => failures.push(`${name}: ${error.message}`))
    }
  }
  await admin.end()
  await embedded?.stop()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
  if (failures.length) throw new Error(`These test databases could not be dropped; drop them by hand:\n${failures.join('\n')}`)
}

export interface TestDatabase {
  url: string
  sql: Sql
  name: string
}

/**
 * A new database for one test file: migrated (from the template), or empty with `{ migrated: false }`,
 * or a copy of another test database of this run (`{ copyOf: name }`; nothing may be connected to it).
 * Dropped when the next file creates its first; one that files share is made `{ forTheRun: true }`.
 * @example const db = await createTestDatabase()
 */
export async function createTestDatabase(options: { migrated?: boolean; copyOf?: string; forTheRun?: boolean } = {}): Promise<TestDatabase> {
  await whileRunning()
  const current = cluster
  if (!current) throw new Error('The test cluster is not provisioned: is test/support/preload.ts preloaded?')
  try {
    await dropFinishedFiles(current)
    const name = `${RUN}_${++counter}`
    const template = options.copyOf ?? (options.migrated === false ? 'template0' : current.template)
    await current.admin.unsafe(`create database ${name} template ${template}`)
    current.created.push(name)
    if (!options.forTheRun) ownerOf.set(name, Bun.main)
    const url = databaseUrl(current.adminUrl, name)
    return { url, name, sql: connectDatabase(url, { max: 4 }) }
  } catch (error) {
    // The cluster torn down under it by a signal: failing now would end the run before the teardown has.
    await whileRunning()
    throw error
  }
}

/** The test file (Bun.main while it runs) that created each database of this run, the template aside. */
const ownerOf = new Map<string, string>()

/**
 * Files run one after the other: when one creates its first database, those of the files before it are
 * dropped, so that the cluster holds one file's databases, not the run's. A standby's base backup (C50)
 * copies the whole cluster: on the server, near the end of a run, that was 45 files' databases.
 * One that cannot be dropped now is dropped at the end (teardownCluster).
 */
async function dropFinishedFiles(current: Cluster): Promise<void> {
  for (const [name, owner] of ownerOf) {
    if (owner === Bun.main) continue
    ownerOf.delete(name)
    const dropped = await current.admin.unsafe(`drop database if exists ${name} with (force)`).then(() => true, () => false)
    if (dropped) current.created.splice(current.created.indexOf(name), 1)
  }
}

function databaseUrl(base: string, database: string): string {
  const url = new URL(base)
  url.pathname = `/${database}`
  return url.toString()
}

