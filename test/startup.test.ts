import { afterAll, describe, expect, test } from 'bun:test'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seedDemo } from '../src/demo/seed-demo'
import { createTestDatabase } from './support/database'
import { runScript, startService } from './support/service'

const dataDir = await mkdtemp(join(tmpdir(), 'vitrine-start-'))
await chmod(dataDir, 0o755)
afterAll(() => rm(dataDir, { recursive: true, force: true }))

async function getJson(url: string) {
  const response = await fetch(url)
  return { status: response.status, body: (await response.json()) as any }
}

describe('bun run start without DATABASE_URL', () => {
  test('starts an embedded database with demo content, stops on SIGTERM, and keeps its data for the next start', async () => {
    const first = await startService({ DATA_DIR: dataDir, PORT: '0' })
    const health = await getJson(`${first.url}/healthz`)
    expect(health).toEqual({ status: 200, body: { status: 'ok' } })
    const posts = await getJson(`${first.url}/api/v1/content/post`)
    expect(posts.status).toBe(200)
    expect(posts.body.meta.total).toBeGreaterThan(10)
    expect(first.output()).toContain('loaded the demo content')
    expect(await first.stop('SIGTERM')).toBe(0)

    const second = await startService({ DATA_DIR: dataDir, PORT: '0' })
    expect(await getJson(`${second.url}/api/v1/content/post`)).toEqual(posts)
    expect(second.output()).not.toContain('loaded the demo content')
    expect(second.output()).not.toContain('migrated the embedded database')
    expect(await second.stop('SIGINT')).toBe(0)
  }, 120_000)

  test('a bad setting stops the start with one line that names the variable', async () => {
    const run = await runScript('start', { DATA_DIR: dataDir, PORT: 'eighty' })
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n')).toEqual(['vitrine: PORT must be a whole number from 0 to 65535, not "eighty".'])
  })
})

describe('bun run seed:demo', () => {
  test('loads the demo site into an empty database', async () => {
    const db = await createTestDatabase()
    const run = await runScript('seed:demo', { DATABASE_URL: db.url })
    expect(run).toMatchObject({ code: 0 })
    const [counts] = await db.sql`
      select
        (select count(*)::int from entries) as entries,
        (select count(*)::int from languages) as languages,
        (select count(distinct status)::int from entries) as statuses,
        (select count(*)::int from entries where status = 'published' and published_at > now()) as embargoed,
        (select count(*)::int from content_types) as types,
        (select count(*)::int from field_values) as field_values
    `
    expect(counts).toEqual({ entries: 60, languages: 3, statuses: 3, embargoed: expect.any(Number), types: 3, field_values: expect.any(Number) })
    expect(counts.embargoed).toBeGreaterThan(0)
    expect(counts.field_values).toBeGreaterThan(0)
    await db.sql.end()
  })

  test('refuses a database that already holds entries, and changes nothing', async () => {
    const db = await createTestDatabase()
    await seedDemo(db.sql)
    const before = await db.sql`select (select count(*)::int from entries) as entries, (select count(*)::int from authors) as authors`
    const run = await runScript('seed:demo', { DATABASE_URL: db.url })
    expect(run.code).toBe(1)
    expect(run.stderr.trim()).toBe('vitrine: The database already holds 60 entries; demo content is only loaded into an empty one.')
    expect(await db.sql`select (select count(*)::int from entries) as entries, (select count(*)::int from authors) as authors`).toEqual(before)
    await db.sql.end()
  })
})
