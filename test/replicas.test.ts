import { afterAll, describe, expect, test } from 'bun:test'
import { ANY_TYPE } from '../src/cache/answer-store'
import { ConfigError, loadConfig } from '../src/config'
import { NotifiedPositions } from '../src/db/notified-positions'
import { createLogger } from '../src/log'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage, writeUnheard } from './support/fixtures'
import { replicatedTestApp, type ReplicatedTestApp } from './support/replicated-app'
import { startService } from './support/service'
import { startStandby } from './support/standby'
import { waitFor } from './support/wait'

/**
 * C50 against a real streaming standby of the test cluster (test/support/standby.ts),
 * made once for this file: reads go to it, never past a notified change it has
 * not replayed, and it leaves and rejoins the rotation as it fails or lags.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
const entryId = await addEntry(db.sql, { type: 'post', translations: { en: { title: 'First', slug: 'first' } } })
const standby = await startStandby(db.url)
const replicaUrl = standby.url(db.name)
const patient = { REPLICA_MAX_LAG_MS: '600000' }
const cached = await replicatedTestApp(db.url, [replicaUrl], { env: patient })
const uncached = await replicatedTestApp(db.url, [replicaUrl], { cache: false, env: patient })
afterAll(async () => {
  await standby.resumeReplay().catch(() => {})
  await cached.close()
  await uncached.close()
  await standby.remove()
  await db.sql.end()
}, 60_000)

const LIST = '/api/v1/content/post'
const ENTRY = '/api/v1/content/post/first'
const REPLICA = `127.0.0.1:${standby.port}/${db.name}`

/** Statements of the content routes (not the positions asked after each notification). */
const contentStatements = (statements: readonly string[]) => statements.filter((statement) => !statement.includes('pg_current_wal_insert_lsn'))

/**
 * C50: the standby has replayed every position `cached` and `uncached` were given. A position is asked
 * of the primary after each notification (and when a listener starts): one answered after the catch-up
 * read its own position would be past it, and the replica could not serve (a flake under load). So the
 * positions are known first, then the catch-up.
 */
async function caughtUp(): Promise<void> {
  await waitFor('the notified positions of both apps', () => [cached, uncached].every((app) => app.replicas.positions.required(ANY_TYPE) !== null))
  await standby.catchUp()
}

/** Writes a new title, and waits until `apps` have heard it (not until its WAL position is known: C36 holds from the notification on). */
async function retitle(title: string, apps: ReplicatedTestApp[]): Promise<void> {
  const heard = apps.map((app) => app.nextChange('entry_translations'))
  await db.sql`update entry_translations set title = ${title} where entry_id = ${entryId}`
  await Promise.all(heard)
}

describe('C50: the notified positions', () => {
  test('C50: until the primary gives the position of a notified change, answers of its type cannot come from a replica; other types keep theirs', async () => {
    const asked: ((position: bigint) => void)[] = []
    const positions = new NotifiedPositions(() => new Promise((resolve) => asked.push(resolve)), createLogger('silent'))
    expect(positions.required(7)).toBeNull()
    positions.onListening({ codes: new Set(['en']), defaultCode: 'en' })
    expect(positions.required(null)).toBeNull()
    asked.shift()!(100n)
    await Bun.sleep(0)
    expect(positions.required(7)).toBe(100n)
    positions.onChange({ table: 'entries', typeIds: new Set([7]) })
    expect(positions.required(7)).toBeNull()
    expect(positions.required(ANY_TYPE)).toBeNull()
    expect(positions.required(8)).toBe(100n)
    expect(positions.required(null)).toBe(100n)
    asked.shift()!(200n)
    await Bun.sleep(0)
    expect(positions.required(7)).toBe(200n)
    expect(positions.required(8)).toBe(100n)
    expect(positions.required(ANY_TYPE)).toBe(200n)
    // A position asked before a later notification does not settle it.
    positions.onChange({ table: 'entries', typeIds: new Set([8]) })
    positions.onChange({ table: 'entries', typeIds: new Set([9]) })
    expect(asked.length).toBe(1)
    asked.shift()!(300n)
    await Bun.sleep(0)
    expect(positions.required(8)).toBe(300n)
    expect(positions.required(9)).toBeNull()
    asked.shift()!(400n)
    await Bun.sleep(0)
    expect(positions.required(9)).toBe(400n)
    expect(positions.lagMs(400n)).toBe(0)
    expect(positions.lagMs(250n)).toBeGreaterThanOrEqual(0)
    positions.onLost()
    expect(positions.required(8)).toBeNull()
  })
})

describe('C50: read replicas', () => {
  test('C50: DATABASE_READ_URLS is a comma-separated list of postgres URLs; a bad one stops the start, naming the variable and never echoing a password', () => {
    expect(loadConfig({}).databaseReadUrls).toEqual([])
    expect(loadConfig({ DATABASE_READ_URLS: ' postgres://a:5432/cms , postgresql://b/cms ' }).databaseReadUrls).toEqual(['postgres://a:5432/cms', 'postgresql://b/cms'])
    expect(loadConfig({}).replicaMaxLagMs).toBe(5000)
    expect(() => loadConfig({ DATABASE_READ_URLS: 'postgres://a/cms,http://user:secret@b/cms' })).toThrow(ConfigError)
    expect(() => loadConfig({ DATABASE_READ_URLS: 'postgres://a/cms,http://user:secret@b/cms' })).toThrow(/^DATABASE_READ_URLS .*number 2/)
    expect(() => loadConfig({ DATABASE_READ_URLS: 'http://user:secret@b/cms' })).not.toThrow(/secret/)
    expect(() => loadConfig({ REPLICA_MAX_LAG_MS: 'soon' })).toThrow(/^REPLICA_MAX_LAG_MS/)
  })

  test('C50: content reads reach the replica, not the primary; /readyz lists it as serving', async () => {
    await caughtUp()
    for (const app of [cached, uncached]) {
      app.primaryStatements.length = 0
      const list = await app.get(LIST)
      expect(list.status).toBe(200)
      expect(list.body.data.map((item: any) => item.title)).toEqual(['First'])
      // The replay position's column never reaches a client.
      expect(list.text).not.toContain('replay')
      expect((await app.get(ENTRY)).body.data.title).toBe('First')
      expect((await app.get('/api/v1/languages')).body.data.map((language: any) => language.code)).toEqual(['en', 'fr'])
      expect((await app.get('/api/v1/content-types')).body.data).toContainEqual({ slug: 'post', name: 'post', total: 1 })
      expect((await app.get('/api/v1/taxonomies')).status).toBe(200)
      expect((await app.get('/api/v1/taxonomies/tag/terms')).status).toBe(404)
      expect(contentStatements(app.replicaStatements.get(REPLICA) ?? []).length).toBeGreaterThanOrEqual(6)
      expect(contentStatements(app.primaryStatements)).toEqual([])
      const ready = await app.get('/readyz')
      expect(ready.status).toBe(200)
      expect(ready.body).toEqual({ status: 'ready', replicas: [{ name: REPLICA, serving: true }] })
    }
  })

  test('C50, C36: while the replica does not replay, a notified write is never served stale, cached or not, nor kept stale; once it replays, answers come from it and from memory', async () => {
    await caughtUp()
    await standby.pauseReplay()
    try {
      for (const round of [1, 2, 3]) {
        const title = `Written while replay is paused ${round}`
        await retitle(title, [cached, uncached])
        for (const app of [cached, uncached]) {
          for (let read = 0; read < 3; read++) {
            expect((await app.get(LIST)).body.data[0].title).toBe(title)
            expect((await app.get(ENTRY)).body.data.title).toBe(title)
          }
        }
      }
    } finally {
      await standby.resumeReplay()
    }
    await caughtUp()
    const title = 'Written once replay resumed'
    await retitle(title, [cached, uncached])
    await caughtUp()
    for (const app of [cached, uncached]) {
      app.primaryStatements.length = 0
      const first = await app.get(LIST)
      expect(first.body.data[0].title).toBe(title)
      expect(contentStatements(app.primaryStatements)).toEqual([])
    }
    const again = await cached.get(LIST)
    expect(again.headers.get('x-cache')).toBe('HIT')
    expect(again.body.data[0].title).toBe(title)
  })

  test('C50: a replica lagging more than REPLICA_MAX_LAG_MS leaves the rotation (logged, /readyz says why) and comes back once it has replayed', async () => {
    const strict = await replicatedTestApp(db.url, [replicaUrl], { cache: false, env: { REPLICA_MAX_LAG_MS: '300' } })
    try {
      const serving = async () => (await strict.get('/readyz')).body.replicas[0]
      await waitFor('the replica serves', async () => (await serving()).serving)
      await standby.pauseReplay()
      try {
        await retitle('Lagging', [strict])
        await waitFor('the lagging replica leaves the rotation', async () => !(await serving()).serving)
        expect((await serving()).reason).toMatch(/^lagging \d+ ms/)
        expect(strict.logs.some((line) => line.includes('left the rotation') && line.includes(REPLICA))).toBe(true)
        strict.replicaStatements.clear()
        expect((await strict.get(LIST)).body.data[0].title).toBe('Lagging')
        expect(strict.replicaStatements.size).toBe(0)
      } finally {
        await standby.resumeReplay()
      }
      await waitFor('the replica comes back', async () => (await serving()).serving)
      expect(strict.logs.some((line) => line.includes('is in the rotation') && line.includes(REPLICA))).toBe(true)
    } finally {
      await strict.close()
    }
  })

  test('C50: `bun run start` with DATABASE_READ_URLS, WORKERS=2 and the cache off: the workers read from the replica (a write no trigger notifies shows only on the primary), log it joining the rotation, and /readyz lists it', async () => {
    await standby.catchUp()
    const service = await startService({ DATABASE_URL: db.url, DATABASE_READ_URLS: replicaUrl, WORKERS: '2', CACHE: 'off', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' })
    try {
      await service.waitForOutput(/a read replica is in the rotation[\s\S]*a read replica is in the rotation/)
      const title = async () => ((await (await fetch(`${service.url}${LIST}`)).json()) as any).data[0].title
      const before = await title()
      // The workers' listeners started after the last catch-up: what they were told is replayed too.
      await standby.catchUp()
      await standby.pauseReplay()
      try {
        // A write no trigger sees (no notification): only the paused replica still shows the old title.
        await writeUnheard(db.sql, (tx) => tx`update entry_translations set title = 'Unnotified' where entry_id = ${entryId}`)
        expect(await db.sql`select 1 from entry_translations where entry_id = ${entryId} and title = 'Unnotified'`).toHaveLength(1)
        await waitFor('a worker answers from the replica', async () => (await title()) === before)
        expect(await (await fetch(`${service.url}/readyz`)).json()).toEqual({ status: 'ready', replicas: [{ name: REPLICA, serving: true }] })
      } finally {
        await standby.resumeReplay()
      }
    } finally {
      expect(await service.stop('SIGTERM')).toBe(0)
    }
  })

  // Last: the standby does not come back.
  test('C50, C22: a replica stopped under load costs no client an error, and leaves the rotation', async () => {
    await caughtUp()
    const title = 'Read under load'
    await retitle(title, [cached, uncached])
    let sent = 0
    const failures: string[] = []
    let killed: Promise<void> | undefined
    // The load goes on for 100 requests after the standby is down, however long its stop takes (a loaded
    // machine could otherwise finish the 400 first, and nothing would have read from the dead replica).
    let sentWhenDown = -1
    const client = async () => {
      while (sent < 400 || sentWhenDown === -1 || sent < sentWhenDown + 100) {
        sent++
        if (sent === 100) killed = standby.kill().finally(() => void (sentWhenDown = sent))
        const response = await uncached.get(sent % 2 ? LIST : ENTRY)
        const got = response.status === 200 ? (response.body.data.title ?? response.body.data[0]?.title) : undefined
        if (got !== title) failures.push(`${response.status} ${response.text.slice(0, 120)}`)
      }
    }
    await Promise.all(Array.from({ length: 16 }, client))
    await killed
    expect(failures).toEqual([])
    const ready = await uncached.get('/readyz')
    expect(ready.status).toBe(200)
    expect(ready.body.replicas[0].serving).toBe(false)
    expect(uncached.logs.some((line) => line.includes('left the rotation'))).toBe(true)
  })
})
