import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { createApp } from '../src/app'
import { serveApp } from '../src/http/serve'
import { loadConfig } from '../src/config'
import { connectDatabase } from '../src/db/connect'
import { createLogger } from '../src/log'

/** Debian's Chromium; never a browser download. Playwright gives it a fresh temporary profile. */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path))
const ARTIFACTS = join(import.meta.dir, 'artifacts')

if (!CHROMIUM) console.log('docs-browser: skipped, no Chromium at /usr/bin/chromium (apt-get install chromium).')

describe('the reference page /docs in a real browser', () => {
  test.skipIf(!CHROMIUM)('shows both operations, with no network beyond the service', async () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused', LOG_LEVEL: 'silent' })
    const sql = connectDatabase(config.databaseUrl!)
    const app = serveApp(createApp({ sql, config, log: createLogger('silent') }), { port: 0, hostname: '127.0.0.1', log: createLogger('silent') })
    const origin = `http://127.0.0.1:${app.port}`
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    afterAll(async () => {
      await browser.close()
      await app.stop(true)
      await sql.end()
    })
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
    const elsewhere: string[] = []
    await page.route('**/*', (route) => {
      const url = route.request().url()
      if (url.startsWith(origin) || url.startsWith('data:')) return route.continue()
      elsewhere.push(url)
      return route.abort()
    })
    await page.goto(`${origin}/docs`)
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 })
    const paths = await page.locator('.opblock-summary-path').allInnerTexts()
    const text = paths.map((path) => path.replace(/\u200b/g, '').trim())
    expect(text).toContain('/api/v1/content/{type}')
    expect(text).toContain('/api/v1/content/{type}/{slug}')
    await expect(page.locator('.title').first().innerText()).resolves.toContain('Vitrine content API')
    await mkdir(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'docs.png'), fullPage: true })
    expect(elsewhere).toEqual([])
  }, 60_000)
})
