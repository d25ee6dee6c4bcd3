/**
 * The built image run as docs/deployment.md ("The image") runs it, on the host's
 * network: migrate and serve with DATABASE_URL, then without it (the embedded
 * PostgreSQL, its data on a volume mounted at /app/.data).
 */
import { freePort } from '../../src/db/embedded'
import { waitFor } from '../support/wait'
import type { Checklist } from './checklist'
import { lastLines } from './command'
import type { Podman } from './podman'

const PREFIX = 'vitrine-image-test'
const SERVED = `${PREFIX}-served`
const EMBEDDED = `${PREFIX}-embedded`
const RESTARTED = `${PREFIX}-restarted`
const VOLUME = `${PREFIX}-data`
/** Short, so that a stop that waits the grace out instead of finishing at once would show. */
const GRACE_MS = 5000
/** podman stop's wait before SIGKILL: well above the grace, so that an ignored SIGTERM shows as exit 137, not as a slow stop. */
const STOP_TIMEOUT_SECONDS = GRACE_MS / 1000 + 10
/** The embedded database's first start creates a cluster: slow on a loaded machine. */
const START_TIMEOUT_MS = 90_000
/** Written by the service only when it created the embedded cluster (src/main.ts). */
const DEMO_LOADED = /"msg":"loaded the demo content"/

export interface SmokeTest {
  podman: Podman
  image: string
  checklist: Checklist
}

/** Containers and the volume an interrupted run may have left, removed before a run and after it. */
export async function removeContainers(podman: Podman): Promise<void> {
  await podman.run(['rm', '--force', '--ignore', SERVED, EMBEDDED, RESTARTED], { allowFailure: true })
  await podman.run(['volume', 'rm', '--force', VOLUME], { allowFailure: true })
}

/** With DATABASE_URL: `bun run migrate` and `bun run seed:demo` in the image, then the service. */
export async function smokeTestWithDatabase({ podman, image, checklist }: SmokeTest, databaseUrl: string): Promise<void> {
  const withDatabase = ['--env', `DATABASE_URL=${databaseUrl}`]
  await checklist.check('`bun run migrate` in the image migrates the database', async () => {
    const { stdout } = await podman.run(['run', '--rm', '--network=host', ...withDatabase, image, 'bun', 'run', 'migrate'])
    expectMatch(stdout, /Applied 0001_/, 'the migrate output')
  })
  await checklist.check('`bun run seed:demo` in the image loads the demo site', async () => {
    const { stdout } = await podman.run(['run', '--rm', '--network=host', ...withDatabase, image, 'bun', 'run', 'seed:demo'])
    expectMatch(stdout, /Loaded the demo site: [1-9]\d* entries/, 'the seed output')
  })

  let url = ''
  await withLogs(podman, SERVED, async () => {
    await checklist.check('the service starts (CMD `bun run start`) and /healthz answers', async () => {
      url = await startContainer(podman, image, SERVED, { DATABASE_URL: databaseUrl, SHUTDOWN_GRACE_MS: String(GRACE_MS) })
      await waitUntilServing(podman, SERVED, url)
      expectEqual(await getJson(`${url}/healthz`), { status: 'ok' }, '/healthz')
    })
    await checklist.check('/readyz: the database answers and is migrated', async () => {
      expectEqual(await getJson(`${url}/readyz`), { status: 'ready' }, '/readyz')
    })
    await checklist.check('content routes answer: the posts list and the page about-us', async () => {
      await expectDemoContent(url)
    })
    await checklist.check('Bun loads the patched postgres.js (patches/, installed in production mode)', async () => {
      await podman.run(['exec', SERVED, 'bun', '-e', PATCH_CHECK])
    })
    await checklist.check('every process of the container runs as the user bun', async () => {
      expectAllBun(await processes(podman, SERVED))
    })
    await checklist.check('the image HEALTHCHECK passes (`podman healthcheck run`)', async () => {
      // Its exit code is the verdict; an image built without `--format docker` has no HEALTHCHECK and fails here too.
      await podman.run(['healthcheck', 'run', SERVED])
    })
    await checklist.check(`\`podman stop\` ends it cleanly: exit 0 within SHUTDOWN_GRACE_MS (${GRACE_MS} ms)`, async () => {
      const ms = await stopContainer(podman, SERVED)
      if (ms > GRACE_MS) throw new Error(`podman stop took ${ms} ms, more than SHUTDOWN_GRACE_MS (${GRACE_MS} ms) for an idle service.`)
    })
  })
}

/** Without DATABASE_URL: the embedded PostgreSQL, its cluster on a volume that outlives the container. */
export async function smokeTestEmbedded({ podman, image, checklist }: SmokeTest): Promise<void> {
  const mount = ['--volume', `${VOLUME}:/app/.data`]
  let firstPage: PostsList | undefined
  await withLogs(podman, EMBEDDED, async () => {
    await checklist.check('without DATABASE_URL the embedded PostgreSQL starts, is migrated, gets the demo and serves it', async () => {
      await podman.run(['volume', 'create', VOLUME])
      const url = await startContainer(podman, image, EMBEDDED, {}, mount)
      await waitUntilServing(podman, EMBEDDED, url, START_TIMEOUT_MS)
      expectMatch(await logs(podman, EMBEDDED), DEMO_LOADED, 'the service log')
      expectEqual(await getJson(`${url}/readyz`), { status: 'ready' }, '/readyz')
      firstPage = await expectDemoContent(url)
    })
    await checklist.check('the embedded PostgreSQL runs as the user bun, like the service', async () => {
      const rows = await processes(podman, EMBEDDED)
      if (!rows.some((row) => /\/bin\/postgres /.test(row.args))) throw new Error(`No postgres process in the container:\n${formatRows(rows)}`)
      expectAllBun(rows)
    })
    await checklist.check('`podman stop` ends the service and its PostgreSQL cleanly (exit 0)', async () => {
      await stopContainer(podman, EMBEDDED)
    })
  })

  await withLogs(podman, RESTARTED, async () => {
    await checklist.check('a new container on the same volume keeps the data (no new cluster, same content)', async () => {
      const restartedUrl = await startContainer(podman, image, RESTARTED, {}, mount)
      await waitUntilServing(podman, RESTARTED, restartedUrl, START_TIMEOUT_MS)
      const log = await logs(podman, RESTARTED)
      if (DEMO_LOADED.test(log)) throw new Error('The service created a new cluster and loaded the demo again: the volume did not keep the data.')
      // Entries as the first container served them (their links differ: they carry each container's port).
      expectEqual(entryIdentities(await expectDemoContent(restartedUrl)), entryIdentities(firstPage), 'the posts after the restart')
      await stopContainer(podman, RESTARTED)
    })
  })
}

/** Run inside the image: the driver file Bun resolves for `postgres` carries the patch. */
const PATCH_CHECK = `
const file = Bun.resolveSync('postgres', process.cwd()).replace(/index\\.js$/, 'connection.js')
const text = await Bun.file(file).text()
if (!text.includes('porsager/postgres#1186')) { console.error(file + ' is not patched'); process.exit(1) }
`

interface PostsList {
  data: { id: number; slug: string; published_at: string }[]
  meta: { total: number }
}

/** What the demo seeding makes anew each time: ids, slugs and publication times taken from the clock. */
function entryIdentities(list: PostsList | undefined) {
  return { total: list?.meta.total, entries: list?.data.map(({ id, slug, published_at }) => ({ id, slug, published_at })) }
}

async function expectDemoContent(url: string): Promise<PostsList> {
  const list = (await getJson(`${url}/api/v1/content/post`)) as PostsList
  if (!(list.data.length > 0 && list.meta.total > 0)) throw new Error(`The posts list is empty: ${JSON.stringify(list).slice(0, 300)}`)
  const page = (await getJson(`${url}/api/v1/content/page/about-us`)) as { data: { slug: string } | null }
  expectEqual(page.data?.slug, 'about-us', 'the slug of /api/v1/content/page/about-us')
  return list
}

async function startContainer(podman: Podman, image: string, name: string, env: Record<string, string>, extra: string[] = []): Promise<string> {
  const port = await freePort()
  const envArgs = Object.entries({ ...env, PORT: String(port) }).flatMap(([key, value]) => ['--env', `${key}=${value}`])
  await podman.run(['run', '--detach', '--name', name, '--network=host', ...envArgs, ...extra, image])
  return `http://127.0.0.1:${port}`
}

async function waitUntilServing(podman: Podman, name: string, url: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${name} to answer ${url}/healthz`, async () => {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined)
    if (response?.ok) return true
    const state = await containerState(podman, name)
    if (!state.running) throw new Error(`The container ${name} exited (${state.exitCode}) before it served.`)
    await Bun.sleep(200)
    return false
  }, timeoutMs)
}

/** Stops the container as an orchestrator would; it must exit 0 on SIGTERM and say it stopped. Returns the milliseconds it took. */
async function stopContainer(podman: Podman, name: string): Promise<number> {
  const started = performance.now()
  await podman.run(['stop', '--time', String(STOP_TIMEOUT_SECONDS), name])
  const ms = Math.round(performance.now() - started)
  const { exitCode } = await containerState(podman, name)
  if (exitCode !== 0) throw new Error(`${name} exited with ${exitCode} after podman stop (${ms} ms)${exitCode === 137 ? ': SIGTERM was ignored, podman had to kill it' : ''}.`)
  expectMatch(await logs(podman, name), /"msg":"stopped"/, 'the service log')
  return ms
}

async function containerState(podman: Podman, name: string): Promise<{ running: boolean; exitCode: number }> {
  const { stdout } = await podman.run(['inspect', '--format', '{{.State.Running}} {{.State.ExitCode}}', name])
  const [running, exitCode] = stdout.trim().split(' ')
  return { running: running === 'true', exitCode: Number(exitCode) }
}

interface ProcessRow {
  user: string
  args: string
}

async function processes(podman: Podman, name: string): Promise<ProcessRow[]> {
  const { stdout } = await podman.run(['top', name, 'user', 'args'])
  return stdout.trim().split('\n').slice(1).map((line) => {
    const [user, ...args] = line.trim().split(/\s+/)
    return { user, args: args.join(' ') }
  })
}

function expectAllBun(rows: ProcessRow[]): void {
  if (rows.length === 0 || rows.some((row) => row.user !== 'bun')) throw new Error(`Not every process runs as bun:\n${formatRows(rows)}`)
}

function formatRows(rows: ProcessRow[]): string {
  return rows.map((row) => `${row.user} ${row.args}`).join('\n')
}

async function logs(podman: Podman, name: string): Promise<string> {
  const { stdout, stderr } = await podman.run(['logs', name])
  return `${stdout}\n${stderr}`
}

/** A failure inside `work` carries the end of the container's log. */
async function withLogs(podman: Podman, name: string, work: () => Promise<void>): Promise<void> {
  try {
    await work()
  } catch (error) {
    const log = await logs(podman, name).catch((logError: Error) => `(no log: ${logError.message})`)
    throw new Error(`${(error as Error).message}\nThe last lines of ${name}'s log:\n${lastLines(log, 30)}`)
  }
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (!Bun.deepEquals(actual, expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)?.slice(0, 300)}, got ${JSON.stringify(actual)?.slice(0, 300)}`)
}

function expectMatch(text: string, pattern: RegExp, what: string): void {
  if (!pattern.test(text)) throw new Error(`${what} does not match ${pattern}:\n${lastLines(text, 20)}`)
}
