import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createApp } from '../src/app'
import { listenForChanges, type ChangeListener } from '../src/cache/change-listener'
import { EventFeed } from '../src/changes/event-feed'
import { loadConfig } from '../src/config'
import { seedDemo } from '../src/demo/seed-demo'
import { serveApp } from '../src/http/serve'
import { createLogger } from '../src/log'
import { createTestDatabase, type TestDatabase } from './support/database'

/** Debian's Chromium; never a browser download. Playwright gives it a fresh temporary profile. */
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path))
const ARTIFACTS = join(import.meta.dir, 'artifacts')

/** The GETs whose answer lists items (`data` an array): Execute must show some. */
const LISTS = ['listContent', 'syncContent', 'listLanguages', 'listContentTypes', 'listTaxonomies', 'listTerms']

if (!CHROMIUM) console.log('docs-browser: skipped, no Chromium at /usr/bin/chromium (apt-get install chromium).')

/**
 * The reference page as a new reader meets it (issue 37): on the demo content,
 * served as `bun run start` serves it (its images included), one row per path
 * (its GET), and "Try it out" → "Execute" answers 200 on each with only what
 * the page fills in.
 */
describe.skipIf(!CHROMIUM)('the reference page /docs in a real browser', () => {
  let db: TestDatabase
  let app: ReturnType<typeof serveApp>
  let feed: EventFeed
  let listener: ChangeListener
  let browser: Browser
  let page: Page
  let pages: Page[]
  let origin: string
  let document: { paths: Record<string, Record<string, { operationId: string }>>; webhooks: Record<string, unknown>; tags: { name: string }[] }
  const elsewhere: string[] = []
  /** What the page sent, by Execute: the reader's request as the browser made it. */
  const sent: string[] = []

  beforeAll(async () => {
    db = await createTestDatabase()
    await seedDemo(db.sql)
    // The document's server is PUBLIC_URL, which "Execute" sends to: this port's, known before the app is built.
    const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = probe.port!
    probe.stop(true)
    origin = `http://127.0.0.1:${port}`
    const config = { ...loadConfig({ DATABASE_URL: db.url, PUBLIC_URL: origin, LOG_LEVEL: 'silent' }), demoMedia: true }
    // The event stream as `bun run start` wires it: a feed that a change listener tells, once it listens.
    const log = createLogger('silent')
    feed = new EventFeed({ sql: db.sql, log, timeoutMs: 5000, maxSubscribers: 10, retentionDays: 30 })
    const listening = Promise.withResolvers<void>()
    listener = listenForChanges(
      db.url,
      { onListening: () => (feed.onListening(), listening.resolve()), onLost: () => feed.onLost(), onChange: (change) => feed.onChange(change), onLanguages: () => {} },
      { timeoutMs: 5000, heartbeatMs: 1000, log },
    )
    await listening.promise
    app = serveApp(createApp({ sql: db.sql, config, log, events: feed }), { port, hostname: '127.0.0.1', log })
    document = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as typeof document
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    // Two readers, each in a context of its own (a renderer process each): Swagger UI renders a row in about a second
    // of CPU, and the rows are tried half by each, on both cores.
    pages = await Promise.all([openDocs(), openDocs()])
    page = pages[0]!
  }, 60_000)

  async function openDocs(): Promise<Page> {
    const opened = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage()
    await opened.route('**/*', (route) => {
      const url = route.request().url()
      if (url.startsWith(origin) || url.startsWith('data:')) return route.continue()
      elsewhere.push(url)
      return route.abort()
    })
    opened.on('request', (request) => {
      if (request.resourceType() === 'fetch' && !request.url().endsWith('/api/v1/openapi.json')) sent.push(request.url().slice(origin.length))
    })
    await opened.goto(`${origin}/docs`)
    await opened.waitForSelector('.opblock-summary-path', { timeout: 20_000 })
    return opened
  }

  afterAll(async () => {
    await browser?.close()
    await app?.stop(true)
    feed?.close()
    await listener?.stop()
    await db?.sql.end()
  })

  test('shows one row per path, its GET, under the tags in a reader\'s order, with no network beyond the service', async () => {
    const paths = Object.keys(document.paths)
    // The document keeps HEAD, OPTIONS and the refused methods for validators; the page shows none of them.
    expect(Object.values(document.paths).every((item) => 'head' in item && 'options' in item)).toBe(true)
    expect(paths).toContain('/media/uploads/{year}/{file}')
    // C57: the webhooks the service sends are shown too, each as the POST a receiver gets, and cannot be tried.
    const webhooks = Object.keys(document.webhooks)
    const rows = page.locator('.opblock')
    expect(await rows.count()).toBe(paths.length + webhooks.length)
    expect(await page.locator('.opblock.opblock-get').count()).toBe(paths.length)
    expect(await page.locator('.opblock.opblock-post').count()).toBe(webhooks.length)
    expect(await page.locator('.opblock.opblock-post .try-out__btn').count()).toBe(0)
    const shown = (await page.locator('.opblock-get .opblock-summary-path').allInnerTexts()).map((path) => path.replace(/\u200b/g, '').trim())
    expect([...shown].sort()).toEqual([...paths].sort())
    const tags = (await page.locator('.opblock-tag').allInnerTexts()).map((text) => text.trim().split(/\s/)[0])
    expect(tags).toEqual(['content', 'discovery', 'sync', 'documentation', 'operations', 'webhooks'])
    await expect(page.locator('.title').first().innerText()).resolves.toContain('Vitrine content API')
    await mkdir(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'docs.png'), fullPage: true })
    expect(elsewhere).toEqual([])
  }, 60_000)

  test('"Try it out" → "Execute" answers 200 on every row with what the page fills in, with items on every list', async () => {
    const operations = Object.values(document.paths).map((item) => item.get!.operationId)
    const answers: Record<string, { status: string; items?: number }> = {}
    await Promise.all(pages.map((reader, half) => tryRows(reader, half)))
    expect(Object.keys(answers).sort()).toEqual([...operations].sort())
    // Swagger UI sends every optional parameter it filled in, with its example or default: a route's examples work together.
    expect(sent).toContain(
      '/api/v1/content/post?page=1&per_page=20&lang=fr&term=category%3Aengineering&author=1&search=cache&order=date&fields=id%2Cslug%2Ctitle%2Calternates&include=alternates%2Chighlights',
    )
    expect(sent).toContain('/api/v1/content/post/why-we-cache-at-the-edge-fr?lang=fr&fields=id%2Cslug%2Ctitle%2Calternates&include=alternates%2Chighlights')
    for (const [operationId, answer] of Object.entries(answers)) {
      expect({ operationId, status: answer.status }).toEqual({ operationId, status: '200' })
      if (answer.items !== undefined) expect({ operationId, listsItems: answer.items > 0 }).toEqual({ operationId, listsItems: true })
    }
    expect(elsewhere).toEqual([])

    /** Every other row of the page (`half` 0 or 1), one at a time, closed again after: the page stays short. */
    async function tryRows(reader: Page, half: number): Promise<void> {
      const rows = reader.locator('.opblock.opblock-get')
      for (let index = half; index < (await rows.count()); index += 2) {
        const row = rows.nth(index)
        const operationId = (await row.getAttribute('id'))!.replace(/^operations-[^-]+-/, '')
        await row.locator('.opblock-summary-control').click()
        await row.locator('.try-out__btn').click()
        await row.locator('button.execute').click()
        const status = row.locator('.live-responses-table tbody .response-col_status')
        await status.waitFor({ timeout: 20_000 })
        const body = await row.locator('.live-responses-table tbody .response-col_description pre').first().innerText()
        // The status cell may add "Undocumented": `GET /` is documented as its 302, and the browser follows it to /docs.
        answers[operationId] = { status: (await status.innerText()).trim().split('\n')[0]!, ...(LISTS.includes(operationId) ? { items: JSON.parse(body).data.length } : {}) }
        if (operationId === 'getContent') expect(JSON.parse(body).data.slug).toBe('why-we-cache-at-the-edge-fr')
        // The stream never ends: the page shows what it sent in its first seconds, its opening `id:` line at least.
        if (operationId === 'streamEvents') expect(body).toStartWith('id: ')
        await row.locator('.opblock-summary-control').click()
      }
    }
  }, 180_000)
})
