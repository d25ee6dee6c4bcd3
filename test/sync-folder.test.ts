import { afterAll, expect, test } from 'bun:test'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { syncFolder } from '../examples/sync-folder'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'

/** C48's worked example (docs/sync-and-events.md): a folder of JSON files kept in sync with a type. */
const db = await createTestDatabase()
const api = testApp(db.url)
const folder = await mkdtemp(join(tmpdir(), 'vitrine-sync-folder-'))
afterAll(async () => {
  await api.close()
  await db.sql.end()
  await rm(folder, { recursive: true, force: true })
})

const options = { baseUrl: 'https://cms.example.com', type: 'post', folder, fetch: (url: string) => api.app.handle(new Request(url.replace('https://cms.example.com', 'http://localhost'))) }
const files = async () => (await readdir(folder)).filter((name) => name.endsWith('.json')).sort()

test('C48 example: the folder holds one file per live entry, run after run, deletions and expiry included', async () => {
  const ids = []
  for (let i = 0; i < 5; i++) ids.push(await addEntry(db.sql))
  expect(await syncFolder(options)).toEqual({ written: 5, removed: 0, fresh: true })
  expect(await files()).toEqual(ids.map((id) => `${id}.json`).sort())

  await db.sql`update entry_translations set title = 'Edited' where entry_id = ${ids[0]}`
  await db.sql`update entries set status = 'draft' where id = ${ids[1]}`
  // Not addEntry: it writes content_types too, which changes every entry of the type.
  const [{ id: added }] = await db.sql`insert into entries (content_type_id, status, published_at) select id, 'published', now() - interval '1 hour' from content_types where slug = 'post' returning id`
  expect(await syncFolder(options)).toEqual({ written: 2, removed: 1, fresh: false })
  expect(await files()).toEqual([ids[0], ids[2], ids[3], ids[4], added].map((id) => `${id}.json`).sort())
  expect(JSON.parse(await readFile(join(folder, `${ids[0]}.json`), 'utf8')).title).toBe('Edited')

  // Every token expired (sql/change-log.md): the next run starts over and drops what is gone.
  await db.sql`delete from entries where id = ${ids[2]}`
  await db.sql`select vitrine_expire_sync_tokens()`
  expect(await syncFolder(options)).toEqual({ written: 4, removed: 1, fresh: true })
  expect(await files()).toEqual([ids[0], ids[3], ids[4], added].map((id) => `${id}.json`).sort())
  const fresh = await api.get('/api/v1/sync/post')
  for (const item of fresh.body.data) expect(JSON.parse(await readFile(join(folder, `${item.id}.json`), 'utf8'))).toEqual(item)
})
