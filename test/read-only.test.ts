import { afterAll, describe, expect, test } from 'bun:test'
import { connectDatabase, openReadPool } from '../src/db/connect'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'
import { startService } from './support/service'
import { waitFor } from './support/wait'

/**
 * Issue 13: read-only by construction. The service's connections refuse to
 * write, and `bun run start` needs no more than the GRANTs of docs/operations.md.
 */
const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
const role = `vitrine_reader_${process.pid}`
afterAll(async () => {
  await db.sql.unsafe(`drop owned by ${role}`).catch(() => {})
  await db.sql.unsafe(`drop role if exists ${role}`)
  await db.sql.end()
})

describe('read-only by construction', () => {
  test("the service's pool cannot write, whatever runs on it (25006)", async () => {
    const sql = openReadPool(db.url, { databasePoolMax: 1, databaseTimeoutMs: 5000, databaseHeavyMax: 1, databaseHeavyQueue: 0 })
    try {
      await expect(sql`insert into authors (name) values ('intruder')`).rejects.toMatchObject({ code: '25006' })
      await expect(sql`update entries set status = 'draft'`).rejects.toMatchObject({ code: '25006' })
      const [{ n }] = await db.sql`select count(*)::int as n from authors where name = 'intruder'`
      expect(n).toBe(0)
    } finally {
      await sql.end()
    }
  })

  test('bun run start serves under a role that may only read (the GRANTs of docs/operations.md), without DDL rights', async () => {
    // The GRANTs of docs/operations.md, word for word but the names.
    await db.sql.unsafe(`create role ${role} login password 'reader'`)
    await db.sql.unsafe(`grant connect on database ${db.name} to ${role}`)
    await db.sql.unsafe(`grant usage on schema public to ${role}`)
    await db.sql.unsafe(`grant select on all tables in schema public to ${role}`)
    const url = new URL(db.url)
    url.username = role
    url.password = 'reader'
    const service = await startService({ DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'info' })
    try {
      const one = await fetch(`${service.url}/api/v1/content/post/hello`)
      expect([one.status, ((await one.json()) as { data: { slug: string } }).data.slug]).toEqual([200, 'hello'])
      expect((await fetch(`${service.url}/api/v1/content/post`)).status).toBe(200)
      expect((await fetch(`${service.url}/readyz`)).status).toBe(200)
      expect(service.output()).not.toContain('"level":"error"')
      expect(service.output()).not.toContain('pending migrations')
      // C57: such a role cannot keep the webhook tables: said once, then no webhook is tried.
      const refusals = () => service.output().split('may not write the webhook tables').length - 1
      await waitFor('the webhook tables refused', () => refusals() > 0)
      await Bun.sleep(300)
      expect(refusals()).toBe(1)
      // C18: the reader compares the kept counts (at start) but may neither rebuild nor fold them.
      expect(service.output()).not.toContain('could not compare the kept live entry counts')
      const reader = connectDatabase(url.toString(), { max: 1 })
      try {
        await expect(reader`select vitrine_repair_live_entry_counts()`).rejects.toMatchObject({ code: '42501' })
        await expect(reader`select vitrine_fold_live_entry_counts(array[1]::bigint[])`).rejects.toMatchObject({ code: '42501' })
        expect(await reader`select * from vitrine_live_entry_count_drift()`).toHaveLength(0)
      } finally {
        await reader.end()
      }
    } finally {
      expect(await service.stop()).toBe(0)
    }
  })
})
