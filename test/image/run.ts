/**
 * `bun run test:image [--no-cache]`: the production image, built and run for
 * real (docs/deployment.md, "The image"). With podman under a private configuration
 * (./podman.ts), it makes a stand-in for the official Bun images once
 * (./stand-in-base.ts), builds the project's Dockerfile unchanged (./build.ts)
 * and smoke-tests the image (./smoke.ts) with DATABASE_URL, against a
 * throwaway database (./database.ts), and without it, on the embedded
 * PostgreSQL. `--no-cache` rebuilds every layer of the image.
 *
 * Everything it keeps (the base's root filesystem, podman's storage) is under
 * ~/.cache/vitrine-image, or VITRINE_IMAGE_CACHE. Exit status 0 when every
 * check passes, 1 otherwise. CI runs it when podman is installed (.ci/run).
 */
import { homedir } from 'node:os'
import { join } from 'node:path'
import { buildImage } from './build'
import { Checklist, seconds } from './checklist'
import { requireCommands } from './command'
import { throwawayDatabase, type ThrowawayDatabase } from './database'
import { privatePodman } from './podman'
import { removeContainers, smokeTestEmbedded, smokeTestWithDatabase } from './smoke'
import { BASE_TAGS, ensureStandInBase } from './stand-in-base'

const ROOT = join(import.meta.dir, '..', '..')
const IMAGE = 'localhost/vitrine:image-test'
const CACHE_DIR = process.env.VITRINE_IMAGE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'vitrine-image')

/** Far above a cold run (about two minutes): a command that hangs must not hold CI until its own limit. */
const RUN_LIMIT_MS = 20 * 60_000

const started = performance.now()
setTimeout(() => {
  console.error(`\nThe image test ran for more than ${RUN_LIMIT_MS / 60_000} minutes: stopped. A later run removes its containers.`)
  process.exit(1)
}, RUN_LIMIT_MS).unref()
const checklist = new Checklist()
const timings: string[] = []
let database: ThrowawayDatabase | undefined
let cleanUp = async () => {}
try {
  console.log(`Image test (podman's storage and the base images under ${CACHE_DIR})`)
  const podman = await checklist.check('podman and runc are installed; podman gets a configuration of its own', async () => {
    requireCommands(['podman', 'runc'])
    const podman = await privatePodman(CACHE_DIR)
    cleanUp = () => removeContainers(podman)
    await cleanUp()
    return podman
  })
  await checklist.check(`the stand-in base images ${BASE_TAGS.join(' and ')} are there`, async () => {
    const step = performance.now()
    const outcome = await ensureStandInBase(podman, CACHE_DIR, (line) => console.log(`    ${line}`))
    timings.push(`base ${outcome} in ${seconds(step)} s`)
  })
  await checklist.check('the Dockerfile builds unchanged', async () => {
    const step = performance.now()
    const noCache = process.argv.includes('--no-cache')
    await buildImage(podman, { root: ROOT, image: IMAGE, cacheDir: CACHE_DIR, noCache })
    timings.push(`image built${noCache ? ' without cache' : ''} in ${seconds(step)} s`)
    const { stdout } = await podman.run(['image', 'inspect', '--format', '{{.Size}}', IMAGE])
    timings.push(`image size ${Math.round(Number(stdout) / 1e6)} MB`)
  })

  const { url: databaseUrl } = await checklist.check('a fresh database for DATABASE_URL', async () => {
    database = await throwawayDatabase()
    console.log(`    on ${database.server}`)
    return database
  })
  await smokeTestWithDatabase({ podman, image: IMAGE, checklist }, databaseUrl)
  await smokeTestEmbedded({ podman, image: IMAGE, checklist })
} catch (error) {
  console.error(`\n${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
} finally {
  await cleanUp()
  await database?.drop()
}
console.log(`${timings.join(', ')}; whole run ${seconds(started)} s`)
console.log(checklist.summary())
// A connection a failure left open must not keep the process alive.
process.exit()
