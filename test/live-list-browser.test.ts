import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { createTestDatabase } from './support/database'
import { addEntry } from './support/fixtures'
import { ROOT, startService, type RunningService } from './support/service'
import { waitFor } from './support/wait'

/** Debian's Chromium; never a browser download. */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path))
if (!CHROMIUM) console.log('live-list-browser: skipped, no Chromium at /usr/bin/chromium (apt-get install chromium).')

/**
 * C49, the worked example of docs/sync-and-events.md: examples/live-list.html, served from
 * another origin, keeps the latest posts of `bun run start` up to date through
 * EventSource, whoever writes to the database, and again after the service
 * restarts (EventSource reconnects with Last-Event-ID).
 */
describe('examples/live-list.html in a real browser', () => {
  test.skipIf(!CHROMIUM)('shows the latest posts, then every write as it commits, across a restart of the service', async () => {
    const db = await createTestDatabase()
    await addEntry(db.sql, { translations: { en: { title: 'First post', slug: 'first' } } })
    const env = { DATABASE_URL: db.url, PORT: '0' }
    let service: RunningService = await startService(env)
    const page = Bun.file(join(ROOT, 'examples', 'live-list.html'))
    const site = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } }) })
    let browser: Browser | undefined
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      })
      const tab = await browser.newPage()
      const titles = () => tab.locator('#entries li').allInnerTexts()
      const shows = async (expected: string[]) => {
        await waitFor(`the page shows ${JSON.stringify(expected)}`, async () => JSON.stringify(await titles()) === JSON.stringify(expected))
      }

      // Another origin than the API's: the page reaches it through CORS (C29), as any frontend.
      await tab.goto(`http://127.0.0.1:${site.port}/?api=${encodeURIComponent(service.url)}&type=post`)
      await waitFor('the page says it is live', async () => (await tab.locator('#status').innerText()) === 'live')
      await shows(['First post'])

      const second = await addEntry(db.sql, { translations: { en: { title: 'Second post', slug: 'second' } } })
      await shows(['Second post', 'First post'])
      await db.sql`update entry_translations set title = 'Second post, edited' where entry_id = ${second}`
      await shows(['Second post, edited', 'First post'])
      await db.sql`update entries set status = 'draft' where id = ${second}`
      await shows(['First post'])

      // A restart: the stream ends, EventSource reconnects with its Last-Event-ID and gets what it missed.
      const port = new URL(service.url).port
      expect(await service.stop('SIGTERM')).toBe(0)
      await addEntry(db.sql, { translations: { en: { title: 'Written while the service was down', slug: 'down' } } })
      service = await startService({ ...env, PORT: port })
      await shows(['Written while the service was down', 'First post'])
      await addEntry(db.sql, { translations: { en: { title: 'After the restart', slug: 'after' } } })
      await shows(['After the restart', 'Written while the service was down', 'First post'])
    } finally {
      // Whatever failed: no browser, site or service outlives the test.
      await browser?.close()
      site.stop(true)
      // SIGTERM: `bun run` passes it on to the service (a SIGKILL would leave the service orphaned).
      if (service.process.exitCode === null) {
        service.process.kill('SIGTERM')
        await Promise.race([service.process.exited, Bun.sleep(10_000)])
        if (service.process.exitCode === null) service.process.kill('SIGKILL')
      }
      await db.sql.end()
    }
  }, 90_000)
})
