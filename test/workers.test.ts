import { afterAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'
import { runScript, startService } from './support/service'

/** Issue 10, item 5: WORKERS=n shares one port on purpose; anything else in use fails the start. */
const db = await createTestDatabase()
await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
afterAll(() => db.sql.end())

describe('WORKERS and the port', () => {
  test('WORKERS=2 runs two processes on one port; a second copy on that port fails with one line; SIGTERM stops all', async () => {
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', WORKERS: '2' })
    try {
      // Each worker says when it serves: wait for the second one.
      for (let attempt = 0; (service.output().match(/Vitrine is serving/g) ?? []).length < 2; attempt++) {
        if (attempt > 600) throw new Error(`the second worker never served:\n${service.output()}`)
        await Bun.sleep(50)
      }
      const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${service.url}/api/v1/content/post/hello`)))
      expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
      const port = new URL(service.url).port
      for (const workers of ['1', '2']) {
        const second = await runScript('start', { DATABASE_URL: db.url, PORT: port, WORKERS: workers })
        expect([workers, second.code]).toEqual([workers, 1])
        expect(second.stderr.trim().split('\n')).toHaveLength(1)
        expect(second.stderr).toContain(`PORT ${port}`)
      }
    } finally {
      expect(await service.stop('SIGTERM')).toBe(0)
    }
    expect(service.output()).toContain('"msg":"stopped","workers":2')
  }, 60_000)
})
