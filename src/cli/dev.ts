/**
 * `bun run dev`: the service, restarted whenever a file under src/ or the
 * extensions folder changes, on a database this process keeps running. This
 * process owns the database, as the WORKERS supervisor does (src/workers.ts):
 * it starts the embedded PostgreSQL (or takes DATABASE_URL), migrates it and
 * loads the demo on the first run, claims the port, then runs the service as
 * a child process. A burst of saves is one restart; a child that fails to start
 * (an extension with a syntax error) has printed its one line, and the next save
 * tries again. A save in the extensions folder starts a spare kept ready, its
 * modules already loaded: it has only the extensions to load. See
 * docs/extensions-dev.md.
 */
import type { Subprocess } from 'bun'
import { watch, type FSWatcher } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { loadConfig } from '../config'
import { openReadPool } from '../db/connect'
import { resolveDatabase } from '../db/open'
import { prepareDatabase } from '../db/prepare'
import { createLogger } from '../log'
import { claimPort, serviceProcessEnvironment, spawnServiceProcess, spawnSpareServiceProcess } from '../workers'
import { runCommand } from './run'

/** Editors save a file in several writes (a temporary file, a rename): wait this long after the last one. */
const SETTLE_MS = 80
/** A child that has not exited this long after SIGTERM is killed. */
const STOP_TIMEOUT_MS = 5000
const SOURCE_DIR = resolve(import.meta.dir, '..')

runCommand(async (onFailure) => {
  const settings = loadConfig(process.env)
  const log = createLogger(settings.logLevel)
  // Beside a running `bun run start`, the embedded PostgreSQL it runs is used as it is (and left running).
  const target = await resolveDatabase(settings, log, onFailure, { joinRunning: true })
  let port: number
  try {
    const sql = openReadPool(target.url, settings)
    await prepareDatabase(sql, target, settings.databaseTimeoutMs, log).finally(() => sql.end())
    port = claimPort(settings.host, settings.port)
  } catch (error) {
    await target.embedded?.stop()
    throw error
  }
  const env = serviceProcessEnvironment(target, port)
  if (settings.metricsPort !== undefined) {
    // The service restarts on every save: a scrape would see its counters start again each time (C53 is for `bun run start`).
    log.warn('METRICS_PORT is not served under bun run dev: metrics are for bun run start')
    delete env.METRICS_PORT
  }

  const extensionsDir = resolve(settings.extensionsDir)
  // The service serving now, and a spare with its modules loaded for the next save of an extension.
  let child: Subprocess | undefined
  let spare: ReturnType<typeof spawnSpareServiceProcess> | undefined
  let stopping = false
  const serve = (started: Subprocess) => {
    child = started
    void started.exited.then((code) => {
      if (child === started && !stopping) log.warn('the service stopped: the next save starts it again', { code })
    })
  }
  const start = (useSpare: boolean) => {
    if (useSpare && spare?.process.exitCode === null) {
      spare.start()
      serve(spare.process)
    } else {
      spare?.process.kill('SIGTERM')
      serve(spawnServiceProcess(env))
    }
    spare = spawnSpareServiceProcess(env)
  }
  const stopChild = async () => {
    const running = child
    child = undefined
    if (!running || running.exitCode !== null) return
    running.kill('SIGTERM')
    const timer = setTimeout(() => running.kill('SIGKILL'), STOP_TIMEOUT_MS)
    await running.exited
    clearTimeout(timer)
  }

  // Restarts run one after the other; saves that come during one make one more.
  let restarting: Promise<void> | undefined
  let changes: string[] = []
  const restart = () => {
    if (stopping || restarting || !changes.length) return
    const changed = changes
    changes = []
    // The spare's modules are the ones on disk when it started: after a change to src/ it is out of date.
    const useSpare = changed.every((path) => resolve(path).startsWith(extensionsDir + sep)) && spare?.process.exitCode === null
    log.info('a file changed: restarting the service', { changed, spare: useSpare })
    // SIGTERM makes the service let go of the port at once (main.ts); the new one binds it with reusePort
    // meanwhile, rather than wait for the old one's requests in flight and connections to close.
    const stopped = stopChild()
    start(useSpare)
    restarting = stopped.finally(() => {
      restarting = undefined
      restart()
    })
  }
  let settle: ReturnType<typeof setTimeout> | undefined
  const changed = (dir: string, file: string | null) => {
    const path = relative(process.cwd(), join(dir, file ?? ''))
    if (!changes.includes(path)) changes.push(path)
    clearTimeout(settle)
    settle = setTimeout(restart, SETTLE_MS)
  }
  const watched = extensionsDir.startsWith(SOURCE_DIR + sep) ? [SOURCE_DIR] : [SOURCE_DIR, extensionsDir]
  const watchers: FSWatcher[] = watched.map((dir) => watch(dir, { recursive: true }, (_event, file) => changed(dir, file)))

  start(false)
  log.info('watching for changes', { dirs: watched.map((dir) => relative(process.cwd(), dir) || '.'), port })

  const shutdown = async () => {
    if (stopping) return
    stopping = true
    clearTimeout(settle)
    for (const watcher of watchers) watcher.close()
    await restarting
    spare?.process.kill('SIGTERM')
    await stopChild()
    await target.embedded?.stop()
    log.info('stopped')
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown())
  process.on('SIGTERM', () => void shutdown())
}, { stopOnSignals: ['SIGTERM', 'SIGINT'] })
