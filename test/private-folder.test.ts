import { afterAll, expect, test } from 'bun:test'
import { chmod, copyFile, mkdir, mkdtemp, readlink, rm, stat } from 'node:fs/promises'
import { tmpdir, userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { cleanEnv, ROOT, startService } from './support/service'

/**
 * The README's two commands in a checkout the `postgres` user may not enter, as a clone under root's home
 * (mode 700) is. As root, PostgreSQL runs as that user: its binaries and its cluster must be within its reach
 * (src/db/embedded.ts keeps them under /var/lib/vitrine then), and the checkout's folders keep their modes.
 */
const home = await mkdtemp(join(tmpdir(), 'vitrine-private-'))
await chmod(home, 0o700)
const checkout = join(home, 'vitrine')
afterAll(async () => {
  const cluster = await readlink(join(checkout, '.data', 'postgres')).catch(() => undefined)
  if (cluster) await rm(resolve(checkout, '.data', cluster), { recursive: true, force: true })
  await rm(home, { recursive: true, force: true })
})

/** The working tree as a clone of it would have it (tracked and new files, without what .gitignore leaves out). */
async function copyCheckout(): Promise<void> {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })
  for (const file of listed.stdout.toString().split('\0').filter(Boolean)) {
    const mode = await stat(join(ROOT, file)).then((found) => found.mode, () => undefined)
    if (mode === undefined) continue
    await mkdir(dirname(join(checkout, file)), { recursive: true })
    // Another test running at once (bun run test's other shard) may remove a scratch file of its own meanwhile.
    const copied = await copyFile(join(ROOT, file), join(checkout, file)).then(() => true, (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false
      throw error
    })
    if (copied) await chmod(join(checkout, file), mode)
  }
}

async function run(command: string[]) {
  const child = Bun.spawn(command, { cwd: checkout, env: cleanEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, output: stdout + stderr }
}

test('bun run start and bun test work in a clone the postgres user may not enter; its folders keep their modes', async () => {
  await copyCheckout()
  const installed = await run(['bun', 'install', '--frozen-lockfile'])
  expect(installed).toMatchObject({ code: 0 })

  const service = await startService({ PORT: '0' }, { cwd: checkout })
  const posts = await fetch(`${service.url}/api/v1/content/post`)
  expect(posts.status).toBe(200)
  expect(((await posts.json()) as { meta: { total: number } }).meta.total).toBeGreaterThan(10)
  expect(service.output()).toContain('loaded the demo content')
  expect(await service.stop('SIGTERM')).toBe(0)
  if (userInfo().uid === 0) expect(service.output()).toContain('"cluster":"/var/lib/vitrine/clusters/')

  // The README's test command, on the files whose helpers start PostgreSQL binaries: the preload's embedded
  // cluster (every database test), a streaming standby made with pg_ctl (test/support/standby.ts), and a
  // second embedded cluster publishing by logical replication (test/support/publisher.ts). Those start at their
  // files' top level, the standby caught up with its primary before its file goes on: one quick test of each file
  // is enough here (the files run whole in the suite itself).
  const oneEach = ['change handler that throws is logged', 'DATABASE_READ_URLS is a comma-separated list', 'a title changed']
  const tested = await run(['bun', 'test', '-t', oneEach.join('|'), 'test/change-listener.test.ts', 'test/replicas.test.ts', 'test/logical-replication.test.ts'])
  expect(tested.output).toMatch(/ 3 pass\n(?: \d+ (?:skip|filtered out)\n)* 0 fail\n/)
  expect(tested.output).not.toContain('Unhandled error')
  expect(tested).toMatchObject({ code: 0 })

  expect((await stat(home)).mode & 0o777).toBe(0o700)
}, 240_000)
