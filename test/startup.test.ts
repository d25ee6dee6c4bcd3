import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runningEmbeddedUrl } from '../src/db/embedded'
import { seedDemo } from '../src/demo/seed-demo'
import { createTestDatabase, type TestDatabase } from './support/database'
import { processRuns, removeAtEnd, temporaryFolder } from './support/leftovers'
import { cleanEnv, ROOT, runScript, startService } from './support/service'
import { waitFor } from './support/wait'

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
    // PORT=0 with the default PUBLIC_URL: storage-relative images are served from the port actually bound.
    const imageUrls = posts.body.data.flatMap((item: any) => (item.featured_image ? [item.featured_image.url] : []))
    expect(imageUrls.filter((url: string) => url.includes('/uploads/')).length).toBeGreaterThan(0)
    for (const url of imageUrls) expect(url).toMatch(new RegExp(`^(${first.url}/media/uploads/|https://images\\.example\\.com/)`))
    // The demo's images are served, every size of every one the demo content names (C15, C46).
    const sizes = posts.body.data.flatMap((item: any) => (item.featured_image ? Object.values(item.featured_image) : [])) as string[]
    for (const url of sizes.filter((url) => url.startsWith(first.url))) {
      const image = await fetch(url)
      expect([url, image.status, image.headers.get('content-type')]).toEqual([url, 200, 'image/jpeg'])
    }
    // A tag list with counts shows something; a browser opening the service lands on the reference.
    const tags = await getJson(`${first.url}/api/v1/taxonomies/tag/terms`)
    expect(tags.body.data.length).toBeGreaterThan(3)
    expect(tags.body.data.every((term: any) => term.total > 0)).toBe(true)
    expect((await fetch(`${first.url}/`, { redirect: 'manual' })).headers.get('location')).toBe('/docs')
    expect(first.output()).toContain('loaded the demo content')
    expect(await first.stop('SIGTERM')).toBe(0)

    const second = await startService({ DATA_DIR: dataDir, PORT: '0' })
    const samePosts = await getJson(`${second.url}/api/v1/content/post`)
    expect(JSON.stringify(samePosts).replaceAll(second.url, first.url)).toBe(JSON.stringify(posts))
    expect(second.output()).not.toContain('loaded the demo content')
    expect(second.output()).not.toContain('migrated the embedded database')
    expect(await second.stop('SIGINT')).toBe(0)
  }, 120_000)

  test('writers have a door: the log names the database without its password, and bun run psql and bun run webhooks reach it beside the running service, or on their own', async () => {
    const service = await startService({ DATA_DIR: dataDir, PORT: '0' })
    try {
      const database = /"database":"(postgres:\/\/[^"]+)"/.exec(service.output())?.[1]
      expect(database).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
      expect(service.output()).toContain('"psql":"bun run psql"')
      const [post] = (await getJson(`${service.url}/api/v1/content/post?per_page=1`)).body.data
      const edited = await runScript('psql', { DATA_DIR: dataDir }, ['-v', 'ON_ERROR_STOP=1', '-c', `update entry_translations set title = 'Edited with psql' where slug = '${post.slug}' and language_code = 'en'`])
      expect([edited.code, edited.stderr]).toEqual([0, ''])
      expect(edited.stdout).toContain('UPDATE 1')
      await waitFor('the edit served', async () => (await getJson(`${service.url}/api/v1/content/post/${post.slug}`)).body.data.title === 'Edited with psql')
      const listed = await runScript('webhooks', { DATA_DIR: dataDir }, ['list'])
      expect([listed.code, listed.stdout.trim()]).toEqual([0, 'No webhooks. Add one: bun run webhooks add URL'])
    } finally {
      expect(await service.stop('SIGTERM')).toBe(0)
    }
    // Nothing running: the embedded PostgreSQL is started for the session, and stopped after.
    const alone = await runScript('psql', { DATA_DIR: dataDir }, ['-At', '-c', "select title from entry_translations where title = 'Edited with psql'"])
    expect([alone.code, alone.stdout.trim()]).toEqual([0, 'Edited with psql'])
    expect(await runningEmbeddedUrl(dataDir)).toBeNull()
  }, 120_000)

  test('a fault thrown outside any promise once the embedded PostgreSQL runs: one line, and that PostgreSQL is stopped before the exit', async () => {
    // The fault must land while the cluster runs. Once (in one CI run of 516 tests, not reproduced since) the start
    // ended within 140 ms, before any cluster ran: such a run is said, with its output, and made again (at most 3).
    for (let attempt = 1; ; attempt++) {
      // A data folder of its own: its first start (initdb, migrations, the demo) leaves time between the cluster's start and serving.
      const folder = await mkdtemp(join(tmpdir(), 'vitrine-stray-embedded-'))
      await chmod(folder, 0o755)
      const pidFile = join(folder, 'data', 'postgres', 'postmaster.pid')
      await Bun.write(
        join(folder, 'extensions', 'throws-once-postgres-runs.ts'),
        `import { existsSync, readFileSync } from 'node:fs'\n` +
          `export default () => {\n` +
          `  const poll = setInterval(() => {\n` +
          // initdb's single-user phases write a negative pid: wait for the server's own.
          `    const pid = existsSync(${JSON.stringify(pidFile)}) ? Number(readFileSync(${JSON.stringify(pidFile)}, 'utf8').split('\\n')[0]) : 0\n` +
          `    if (!(pid > 0)) return\n` +
          `    clearInterval(poll)\n` +
          `    console.log('postgres pid ' + pid)\n` +
          `    throw new Error('a stray fault')\n` +
          `  }, 10)\n` +
          `}\n`,
      )
      const started = performance.now()
      const run = await runScript('start', { DATA_DIR: join(folder, 'data'), EXTENSIONS_DIR: join(folder, 'extensions'), PORT: '0' })
      const postgresPid = Number(/postgres pid (\d+)/.exec(run.stdout)?.[1])
      const found = { code: run.code, stderr: run.stderr.trim(), pidFileLeft: existsSync(pidFile), postgresRunning: postgresPid > 0 && processRuns(postgresPid) }
      if (found.postgresRunning) process.kill(postgresPid, 'SIGQUIT')
      await rm(folder, { recursive: true, force: true })
      if (!(postgresPid > 0) && attempt < 3) {
        console.log(`the start ended after ${Math.round(performance.now() - started)} ms before its cluster ran (attempt ${attempt}): code ${run.code}, stderr ${JSON.stringify(run.stderr)}, stdout ${JSON.stringify(run.stdout.slice(-2000))}`)
        continue
      }
      expect(found).toEqual({ code: 1, stderr: 'vitrine: could not start: a stray fault', pidFileLeft: false, postgresRunning: false })
      expect(postgresPid).toBeGreaterThan(0)
      return
    }
  }, 180_000)

  // A command that ends by itself says only the signal: `bun run migrate` (seed:demo, repair and webhooks alike).
  const signalled = [
    { script: 'start', doing: 'the first start migrates or loads the demo', line: 'vitrine: stopped by SIGTERM while starting.', done: 'Vitrine is serving' },
    { script: 'migrate', doing: '`bun run migrate` migrates a new embedded database', line: 'vitrine: stopped by SIGTERM.', done: 'Applied' },
  ]
  for (const { script, doing, line, done } of signalled) {
    test(`a SIGTERM while ${doing} (its embedded PostgreSQL ready): one line, exit 143, and that PostgreSQL is stopped`, async () => {
      // A data folder of its own: its first run leaves time between the cluster's start and the end of its
      // work. A run that was done before the signal came proves nothing: said, and made again (at most 3).
      for (let attempt = 1; ; attempt++) {
        const folder = await temporaryFolder('vitrine-start-signal-')
        await chmod(folder.path, 0o755)
        const pidFile = join(folder.path, 'data', 'postgres', 'postmaster.pid')
        const child = Bun.spawn(['bun', 'run', '--silent', script], { cwd: ROOT, env: cleanEnv({ DATA_DIR: join(folder.path, 'data'), PORT: '0' }), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
        const registered = removeAtEnd(async () => {
          child.kill('SIGKILL')
          await child.exited
        })
        const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
        // The server's own pid (initdb's single-user phases write a negative one) and its status line: ready, so the
        // run is past the cluster and into the migrations or the demo.
        // Read, not first checked: initdb's phases write and remove it.
        const postmaster = async () => (await Bun.file(pidFile).text().catch(() => '')).split('\n')
        await waitFor('the embedded PostgreSQL is ready', async () => child.exitCode !== null || (await postmaster())[7]?.trim() === 'ready', 60_000)
        const pid = Number((await postmaster())[0] ?? 0)
        child.kill('SIGTERM')
        const code = await child.exited
        registered.done()
        const [stdout, stderr] = await output
        const found = { code, stderr: stderr.trim(), pidFileLeft: existsSync(pidFile), postgresRunning: pid > 0 && processRuns(pid) }
        if (found.postgresRunning) {
          process.kill(pid, 'SIGQUIT')
          await waitFor('the stray PostgreSQL exits', () => !processRuns(pid))
        }
        await folder.remove()
        if (stdout.includes(done) && attempt < 3) {
          console.log(`${script} was done before the SIGTERM came (attempt ${attempt}): code ${code}`)
          continue
        }
        expect(found).toEqual({ code: 143, stderr: line, pidFileLeft: false, postgresRunning: false })
        expect(pid).toBeGreaterThan(0)
        return
      }
    }, 180_000)
  }

  test('an embedded PostgreSQL that cannot start: one line, and the exit does not wait for a stop of what has exited', async () => {
    // A cluster folder with a version and nothing else: the server exits at once.
    const folder = await mkdtemp(join(tmpdir(), 'vitrine-broken-cluster-'))
    await chmod(folder, 0o755)
    await Bun.write(join(folder, 'postgres', 'PG_VERSION'), '18\n')
    const started = performance.now()
    const run = await runScript('start', { DATA_DIR: folder, PORT: '0' })
    const seconds = (performance.now() - started) / 1000
    await rm(folder, { recursive: true, force: true })
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toStartWith(`vitrine: The embedded PostgreSQL under ${join(folder, 'postgres')} could not start:`)
    // The cleanup of a failed start waits at most 10 s (src/cli/run.ts) for a stop that never ends: it must not be asked to.
    expect(seconds).toBeLessThan(8)
  }, 60_000)

  test('a bad setting stops the start with one line that names the variable', async () => {
    const run = await runScript('start', { DATA_DIR: dataDir, PORT: 'eighty' })
    expect(run.code).toBe(1)
    expect(run.stderr.trim().split('\n')).toEqual(['vitrine: PORT must be a whole number from 0 to 65535, not "eighty".'])
  })
})

describe('bun run start: settings checked at start, one line each', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(() => db.sql.end())
  const start = (env: Record<string, string>) => runScript('start', { DATABASE_URL: db.url, PORT: '0', ...env })
  const oneLine = (run: { stderr: string }) => run.stderr.trim().split('\n')

  test('EXTENSIONS_DIR set to a folder that does not exist', async () => {
    const run = await start({ EXTENSIONS_DIR: './no-such-folder' })
    expect(run.code).toBe(1)
    expect(oneLine(run)).toEqual([`vitrine: EXTENSIONS_DIR must be a folder that exists, not "./no-such-folder" (${join(ROOT, 'no-such-folder')}).`])
  })

  test('a fault thrown outside any promise while starting (a child process that cannot be spawned does that) is one line, not a hang', async () => {
    const extensions = await mkdtemp(join(tmpdir(), 'vitrine-throwing-extension-'))
    await Bun.write(join(extensions, 'throws-later.ts'), "export default () => { setTimeout(() => { throw new Error('posix_spawn denied') }, 0) }\n")
    const run = await start({ EXTENSIONS_DIR: extensions })
    await rm(extensions, { recursive: true, force: true })
    expect(run.code).toBe(1)
    expect(oneLine(run)).toEqual(['vitrine: could not start: posix_spawn denied'])
  })

  test('a fault thrown outside any promise still stops what the start had set up (an embedded PostgreSQL) before the exit', async () => {
    // runCommand as main.ts uses it, with a stray fault and a cleanup that takes a while: the exit waits for it.
    const folder = await mkdtemp(join(tmpdir(), 'vitrine-stray-fault-'))
    const mark = join(folder, 'stopped')
    await Bun.write(
      join(folder, 'command.ts'),
      `import { runCommand } from ${JSON.stringify(join(ROOT, 'src', 'cli', 'run.ts'))}\n` +
        `runCommand(async (onFailure) => {\n` +
        `  onFailure(async () => { await Bun.sleep(100); await Bun.write(${JSON.stringify(mark)}, 'stopped') })\n` +
        `  setTimeout(() => { throw new Error('a stray fault') }, 0)\n` +
        `  await Bun.sleep(60_000)\n` +
        `})\n`,
    )
    const child = Bun.spawn(['bun', join(folder, 'command.ts')], { stdout: 'pipe', stderr: 'pipe' })
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
    const stopped = existsSync(mark) ? await Bun.file(mark).text() : null
    await rm(folder, { recursive: true, force: true })
    expect([code, stderr.trim(), stopped]).toEqual([1, 'vitrine: could not start: a stray fault', 'stopped'])
  })

  test('DATA_DIR that cannot be made', async () => {
    const run = await runScript('start', { DATA_DIR: join(ROOT, 'package.json', 'data'), PORT: '0' })
    expect(run.code).toBe(1)
    expect(oneLine(run)[0]).toStartWith(`vitrine: The data folder ${join(ROOT, 'package.json', 'data')} (DATA_DIR) cannot be made: ENOTDIR`)
    expect(oneLine(run)).toHaveLength(1)
  })

  test('HOST that is not an address or a host name', async () => {
    const run = await start({ HOST: 'my host!' })
    expect(run.code).toBe(1)
    expect(oneLine(run)).toEqual(['vitrine: HOST must be an IP address or a host name (0.0.0.0 for every interface, 127.0.0.1, ::, localhost), not "my host!".'])
  })

  test('HOST that is no address of this machine', async () => {
    // 192.0.2.1 is reserved for documentation (RFC 5737): never a machine's own.
    const run = await start({ HOST: '192.0.2.1' })
    expect(run.code).toBe(1)
    expect(oneLine(run)).toEqual(['vitrine: HOST 192.0.2.1 is not an address of this machine: use one of its addresses, or 0.0.0.0 for all of them.'])
  })

  test('PORT already in use, even by another Vitrine; the embedded PostgreSQL started for nothing is stopped', async () => {
    const first = await startService({ DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1' })
    const port = new URL(first.url).port
    const run = await runScript('start', { DATA_DIR: dataDir, PORT: port, HOST: '127.0.0.1' })
    expect(await first.stop()).toBe(0)
    expect(run.code).toBe(1)
    expect(oneLine(run)).toEqual([`vitrine: PORT ${port} on HOST 127.0.0.1 is in use by another process (EADDRINUSE).`])
    expect(existsSync(join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true)
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false)
  }, 60_000)
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
