import { afterAll, describe, expect, test } from 'bun:test'
import { createClient as generateHeyApiClient } from '@hey-api/openapi-ts'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { serveApp } from '../src/http/serve'
import { loadConfig } from '../src/config'
import { connectDatabase } from '../src/db/connect'
import { createLogger } from '../src/log'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage } from './support/fixtures'
import { readingTime, registryOf } from './support/openapi'
import { temporaryFolder } from './support/leftovers'
import { ROOT } from './support/service'

/**
 * Two client generators, run on the document a live service serves (with an
 * extension that adds `reading_time_minutes` and removes `excerpt`): the code
 * a user writes against each (test/clients/*.ts) must compile under --strict,
 * and then call the service.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr')
await addEntry(db.sql, { translations: { en: { title: 'Hello', slug: 'hello', body: 'word '.repeat(450) }, fr: { title: 'Bonjour', slug: 'bonjour' } } })
const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: db.url, PORT: '0', LOG_LEVEL: 'silent' })
const sql = connectDatabase(db.url)
const app = serveApp(createApp({ sql, config, log: createLogger('silent'), filters: await registryOf(readingTime) }), { port: 0, hostname: '127.0.0.1', log: createLogger('silent') })
const baseUrl = `http://127.0.0.1:${app.port}`
// Inside the repository, so that the generated code finds node_modules; one folder per run.
const temporary = await temporaryFolder('.generated-clients-', join(ROOT, 'test'))
const workdir = temporary.path
afterAll(async () => {
  await app.stop(true)
  await sql.end()
  await db.sql.end()
  await temporary.remove()
})

describe('clients generated from the served document', () => {
  test('openapi-typescript + openapi-fetch and @hey-api/openapi-ts compile under --strict and call the service', async () => {
    const document = (await (await fetch(`${baseUrl}/api/v1/openapi.json`)).json()) as OpenAPI3
    await cp(join(ROOT, 'test', 'clients'), workdir, { recursive: true })
    await Bun.write(join(workdir, 'generated', 'openapi-typescript.ts'), astToString(await openapiTS(document)))
    await generateHeyApiClient({ input: { ...document }, output: { path: join(workdir, 'generated', 'hey-api') }, logs: { level: 'silent' } })

    const tsc = Bun.spawn(['bun', join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--strict', '-p', join(workdir, 'tsconfig.json')], { cwd: workdir, stdout: 'pipe', stderr: 'pipe' })
    const [output, code] = await Promise.all([new Response(tsc.stdout).text(), tsc.exited])
    expect(output).toBe('')
    expect(code).toBe(0)

    const expected = {
      list: [200, 'Bonjour', 1, 10],
      single: [200, 'hello'],
      missing: [404, 'Not found.'],
      refused: [405, 'Method not allowed.', 'GET, HEAD, OPTIONS'],
    }
    const { readWithOpenapiFetch } = await import(join(workdir, 'openapi-fetch-client.ts'))
    expect(await readWithOpenapiFetch(baseUrl)).toEqual(expected)
    const { readWithHeyApi } = await import(join(workdir, 'hey-api-client.ts'))
    expect(await readWithHeyApi(baseUrl)).toEqual(expected)
  }, 120_000)
})
