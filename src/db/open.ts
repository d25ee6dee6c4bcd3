import type { Config } from '../config'
import type { Logger } from '../log'
import { runningEmbeddedUrl, startEmbeddedDatabase, type EmbeddedDatabase } from './embedded'

export interface DatabaseTarget {
  url: string
  /** Set when the database is the embedded one, started by this process. */
  embedded?: EmbeddedDatabase
}

/**
 * `DATABASE_URL` when it is set; otherwise the embedded PostgreSQL under `DATA_DIR`, started now.
 * `onFailure` (runCommand's) is given its stop before it starts: a fault while it starts stops it too.
 * With `joinRunning` (a command used beside the service), an embedded PostgreSQL already running under
 * `DATA_DIR` is used as it is (and left running).
 * @example const { url, embedded } = await resolveDatabase(config, log, onFailure)
 */
export async function resolveDatabase(config: Config, log: Logger, onFailure?: (cleanup: () => Promise<unknown>) => void, { joinRunning = false } = {}): Promise<DatabaseTarget> {
  if (config.databaseUrl) return { url: config.databaseUrl }
  const running = joinRunning ? await runningEmbeddedUrl(config.dataDir) : null
  if (running) {
    log.info('using the embedded PostgreSQL already running', { dataDir: config.dataDir })
    return { url: running }
  }
  log.info('starting the embedded PostgreSQL', { dataDir: config.dataDir })
  const embedded = await startEmbeddedDatabase({
    dataDir: config.dataDir,
    onLog: (line) => log.debug('postgres', { line }),
    // A command's fault from the moment the server starts stops it (runCommand).
    onStarting: onFailure,
  })
  log.info('the embedded PostgreSQL is ready', { cluster: embedded.clusterDir, created: embedded.created })
  return { url: embedded.url, embedded }
}
