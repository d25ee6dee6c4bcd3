import { afterAll, describe, expect, test } from 'bun:test'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createTestDatabase } from './support/database'
import { removeFileAtEnd, temporaryFolder } from './support/leftovers'
import { addEntry } from './support/fixtures'
import { ROOT, startService, type RunningService } from './support/service'
import { waitFor } from './support/wait'

// `bun run dev` (src/cli/dev.ts): real processes, real PostgreSQL.
const folders: { remove(): Promise<void> }[] = []
const running: RunningService[] = []
const touched: { path: string; registered: { done(): void } }[] = []
afterAll(async () => {
  for (const file of touched) {
    await rm(file.path, { force: true })
    file.registered.done()
  }
  for (const service of running) if (service.process.exitCode === null) await service.stop()
  for (const folder of folders) await folder.remove()
})

async function tempFolder(prefix: string): Promise<string> {
  const folder = await temporaryFolder(prefix)
  folders.push(folder)
  return folder.path
}

async function startDev(env: Record<string, string>): Promise<RunningService> {
  const service = await startService({ PORT: '0', HOST: '127.0.0.1', ...env }, { script: 'dev', timeoutMs: 120_000 })
  running.push(service)
  return service
}

/** An extension that adds `field` with `value`. */
function flagExtension(field: string, value: string): string {
  return `import { defineExtension, t } from '#vitrine/extension'
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data) => ({ ...data, ${field}: ${JSON.stringify(value)} }), { schema: { add: { ${field}: t.String() } } })
})
`
}

/** Saves `text` as `file`, then waits until `path` answers an item whose `field` is `value`; returns the milliseconds it took. */
async function saveAndWait(service: RunningService, file: string, text: string, path: string, field: string, value: string | undefined): Promise<number> {
  const saved = performance.now()
  await writeFile(file, text)
  await waitFor(`${path} serves ${field} = ${value}`, async () => {
    const answer = await fetch(`${service.url}${path}`).catch(() => undefined)
    if (answer?.status !== 200) return false
    const body = (await answer.json()) as { data: Record<string, unknown> }
    return body.data[field] === value
  }, 10_000)
  return Math.round(performance.now() - saved)
}

describe('bun run dev', () => {
  test('a new extension file shows in answers after one save; a broken one is one clear line, and the next save serves again', async () => {
    const db = await createTestDatabase()
    await addEntry(db.sql, { translations: { en: { title: 'Hello', slug: 'hello' } } })
    await db.sql.end()
    const extensions = await tempFolder('vitrine-dev-extensions-')
    const dev = await startDev({ DATABASE_URL: db.url, EXTENSIONS_DIR: extensions })
    const first = await fetch(`${dev.url}/api/v1/content/post/hello`)
    expect(((await first.json()) as any).data).not.toHaveProperty('dev_flag')

    const reload = await saveAndWait(dev, join(extensions, '10-flag.ts'), flagExtension('dev_flag', 'one'), '/api/v1/content/post/hello', 'dev_flag', 'one')
    console.log(`bun run dev: a new extension served ${reload} ms after its save`)
    // A save in the extensions folder starts the spare, its modules already loaded.
    expect(dev.output()).toMatch(/"msg":"a file changed: restarting the service","changed":\["[^"]*10-flag\.ts"\],"spare":true/)

    const broken = join(extensions, '20-broken.ts')
    await writeFile(broken, 'export default (')
    await dev.waitForOutput(/vitrine: The extension \S*20-broken\.ts failed to load: [^\n]+\n/)
    const [line] = dev.output().split('\n').filter((text) => text.startsWith('vitrine: '))
    expect(line).toMatch(/^vitrine: The extension \S*20-broken\.ts failed to load: .+$/)
    await dev.waitForOutput(/the next save starts it again/)

    const recovered = await saveAndWait(dev, broken, flagExtension('fixed', 'yes'), '/api/v1/content/post/hello', 'fixed', 'yes')
    console.log(`bun run dev: the fixed extension served ${recovered} ms after its save`)

    // A file of the service's own changes: a fresh process, not the spare (its modules are out of date).
    const source = join(ROOT, 'src', `dev-test-${process.pid}.txt`)
    touched.push({ path: source, registered: removeFileAtEnd(source) })
    const servedBefore = dev.output().split('"msg":"Vitrine is serving').length
    await writeFile(source, 'a change under src/')
    await dev.waitForOutput(/"changed":\["src\/dev-test-\d+\.txt"\],"spare":false/)
    await waitFor('the service serves again', () => dev.output().split('"msg":"Vitrine is serving').length > servedBefore)
    expect((((await (await fetch(`${dev.url}/api/v1/content/post/hello`)).json()) as any).data.fixed)).toBe('yes')
    expect(await dev.stop()).toBe(0)
    await rm(source)
  }, 60_000)

  test('on the embedded database: a reload keeps the same PostgreSQL process; stopping stops the service, then PostgreSQL', async () => {
    const dataDir = await tempFolder('vitrine-dev-data-')
    const extensions = await tempFolder('vitrine-dev-extensions-')
    const dev = await startDev({ DATA_DIR: dataDir, EXTENSIONS_DIR: extensions })
    const cluster = /"cluster":"([^"]+)"/.exec(dev.output())![1]
    const postmaster = async () => Number((await readFile(join(cluster, 'postmaster.pid'), 'utf8')).split('\n')[0])
    const before = await postmaster()
    // The demo, loaded on the first run.
    await saveAndWait(dev, join(extensions, '10-flag.ts'), flagExtension('dev_flag', 'embedded'), '/api/v1/content/post/shipping-a-content-api', 'dev_flag', 'embedded')
    expect(await postmaster()).toBe(before)
    expect(() => process.kill(before, 0)).not.toThrow()
    expect(await dev.stop()).toBe(0)
    expect(dev.output()).toContain('"msg":"stopped"')
    await waitFor('PostgreSQL has stopped', () => {
      try {
        process.kill(before, 0)
        return false
      } catch {
        return true
      }
    })
  }, 180_000)
})
