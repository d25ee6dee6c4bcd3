/**
 * The database the image is smoke-tested against with DATABASE_URL: a fresh
 * `vitrine_image_test` on the machine's PostgreSQL server (the one
 * TEST_DATABASE_URL names, else postgres://postgres@127.0.0.1:5432), dropped at
 * the end. A machine with no server answering gets an embedded PostgreSQL in a
 * temporary folder instead. Containers reach either on 127.0.0.1: they share
 * the host's network.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../../src/db/connect'
import { startEmbeddedDatabase } from '../../src/db/embedded'

const NAME = 'vitrine_image_test'

export interface ThrowawayDatabase {
  url: string
  /** Where it lives, for the log. */
  server: string
  drop(): Promise<void>
}

/** @example const db = await throwawayDatabase(); …; await db.drop() */
export async function throwawayDatabase(): Promise<ThrowawayDatabase> {
  const serverUrl = withDatabase(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', 'postgres')
  const admin = connectDatabase(serverUrl, { max: 1, timeoutMs: 3000 })
  if (await answers(admin)) {
    await recreate(admin)
    return {
      url: withDatabase(serverUrl, NAME),
      server: new URL(serverUrl).host,
      drop: async () => {
        await admin.unsafe(`drop database if exists ${NAME} with (force)`)
        await admin.end()
      },
    }
  }
  await admin.end({ timeout: 1 })
  const dataDir = await mkdtemp(join(tmpdir(), 'vitrine-image-test-'))
  // PostgreSQL runs as another user when we are root: it must reach its folder.
  await chmod(dataDir, 0o755)
  const embedded = await startEmbeddedDatabase({ dataDir, preferredPort: 0 })
  const embeddedAdmin = connectDatabase(embedded.url, { max: 1 })
  await recreate(embeddedAdmin)
  await embeddedAdmin.end()
  return {
    url: withDatabase(embedded.url, NAME),
    server: `an embedded PostgreSQL (no server answers at ${new URL(serverUrl).host})`,
    drop: async () => {
      await embedded.stop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

async function answers(sql: Sql): Promise<boolean> {
  return sql`select 1`.then(() => true, () => false)
}

/** A database left by an interrupted run goes first. */
async function recreate(admin: Sql): Promise<void> {
  await admin.unsafe(`drop database if exists ${NAME} with (force)`)
  await admin.unsafe(`create database ${NAME}`)
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}
