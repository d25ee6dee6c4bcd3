import type { Config } from '../config'
import type { Logger } from '../log'
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded'

export interface DatabaseTarget {
  url: string
  /** Set when the database is the embedded one, started by this process. */
  embedded?: EmbeddedDatabase
}

/**
 * `DATABASE_URL` when it is set; otherwise the embedded PostgreSQL under `DATA_DIR`, started now.
 * @example const { url, embedded } = await resolveDatabase(config, log)
 */
export async function resolveDatabase(config: Config, log: Logger): Promise<DatabaseTarget> {
  if (config.databaseUrl) return { url: config.databaseUrl }
  log.info('starting the embedded PostgreSQL', { dataDir: config.dataDir })
  const embedded = await startEmbeddedDatabase({
    dataDir: config.dataDir,
    onLog: (line) => log.debug('postgres', { line }),
  })
  log.info('the embedded PostgreSQL is ready', { cluster: embedded.clusterDir, created: embedded.created })
  return { url: embedded.url, embedded }
}
