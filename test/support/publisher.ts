import { chmod, copyFile, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../../src/db/connect'
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/db/embedded'
import { migrate, MIGRATIONS_DIR } from '../../src/db/migrate'
import { CONTENT_TABLES } from './fixtures'
import { removeAtEnd } from './leftovers'
import { waitFor } from './wait'

/**
 * A CMS's own database publishing its content by logical replication (C56
 * tests, bench/replication.ts): a second cluster made with the embedded
 * PostgreSQL's binaries, started with wal_level=logical, holding the data model
 * alone (no migration of the service's beyond the first), as
 * docs/logical-replication.md sets it up. A real publisher, never a mock.
 */
export interface Publisher {
  /** A connection to its `cms` database, where the tests write content. */
  cms: Sql
  /**
   * Subscribes the service's database `subscriber` (migrated) to the content tables: empties its
   * languages and content types (the copy brings the publisher's), subscribes, waits for the copy.
   */
  subscribe(subscriber: Sql): Promise<void>
  /** Runs `write` on the publisher; resolves once `subscriber` has applied it (a marker written after it has arrived). */
  applied(subscriber: Sql, write: (cms: Sql) => Promise<unknown>): Promise<void>
  /** Drops the subscription of `subscriber` (if any), stops the cluster and removes its folder. */
  stop(subscriber?: Sql): Promise<void>
}

const SUBSCRIPTION = 'vitrine_feed'

/**
 * @example const publisher = await startPublisher(); await publisher.subscribe(db.sql); …; await publisher.stop(db.sql)
 */
export async function startPublisher(): Promise<Publisher> {
  const folder = await mkdtemp(join(tmpdir(), 'vitrine-publisher-'))
  await chmod(folder, 0o755)
  let cluster: EmbeddedDatabase | undefined
  let cms: Sql | undefined
  try {
    cluster = await startEmbeddedDatabase({ dataDir: folder, preferredPort: 0 })
    const admin = connectDatabase(cluster.url, { max: 1 })
    await admin`alter system set wal_level = logical`
    await admin`create database cms`
    await admin.end()
    await cluster.stop()
    cluster = await startEmbeddedDatabase({ dataDir: folder, preferredPort: 0 })
    cms = connectDatabase(Object.assign(new URL(cluster.url), { pathname: '/cms' }).toString(), { max: 2 })
    const model = await dataModelOnly()
    await migrate(cms, model).finally(() => rm(model, { recursive: true, force: true }))
    await cms.unsafe(`create publication vitrine_content for table ${CONTENT_TABLES.join(', ')}`)
  } catch (error) {
    // Nothing is left running when the publisher cannot be made.
    await cms?.end()
    await cluster?.stop()
    await rm(folder, { recursive: true, force: true })
    throw error
  }
  return publisherOf(cluster, cms, folder)
}

function publisherOf(cluster: EmbeddedDatabase, cms: Sql, folder: string): Publisher {
  const url = new URL(cluster.url)
  const conninfo = `host=127.0.0.1 port=${url.port} dbname=cms user=${decodeURIComponent(url.username)} password=${decodeURIComponent(url.password)}`
  let marks = 0
  /** The database subscribed last: what an end of run without stop() leaves a subscription in. */
  let subscribed: Sql | undefined
  const publisher: Publisher = {
    cms,
    async subscribe(subscriber) {
      subscribed = subscriber
      await subscriber`truncate languages, content_types cascade`
      // Trusted text: this cluster's own address and password.
      await subscriber.unsafe(`create subscription ${SUBSCRIPTION} connection '${conninfo}' publication vitrine_content`)
      await waitFor('the initial copy is done', async () => (await subscriber`select 1 from pg_subscription_rel where srsubstate <> 'r'`).length === 0 && (await subscriber`select 1 from pg_subscription_rel`).length === CONTENT_TABLES.length, 60_000)
    },
    async applied(subscriber, write) {
      await write(cms)
      const mark = `mark-${process.pid}-${++marks}`
      await cms`insert into authors (name) values (${mark})`
      await waitFor(`the subscriber applies ${mark}`, async () => (await subscriber`select 1 from authors where name = ${mark}`).length === 1, 30_000)
    },
    async stop(subscriber) {
      registered.done()
      await subscriber?.unsafe(`drop subscription if exists ${SUBSCRIPTION}`).catch(() => {})
      await cms.end()
      await cluster.stop()
      await rm(folder, { recursive: true, force: true })
    },
  }
  const registered = removeAtEnd(() => publisher.stop(subscribed))
  return publisher
}

/** A folder holding the first migration alone: the data model, without anything of the service. */
async function dataModelOnly(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vitrine-data-model-'))
  for (const file of (await readdir(MIGRATIONS_DIR)).filter((name) => name.startsWith('0001_'))) await copyFile(join(MIGRATIONS_DIR, file), join(dir, file))
  return dir
}
