/**
 * What every benchmark starts with, before its dataset and its service: the
 * settings as the service reads them (LOG_LEVEL=warn), the PostgreSQL server
 * the datasets go on (DATABASE_URL's, else the embedded one, started here),
 * and one connection to that server to make them.
 */
import { loadConfig, type Config } from '../src/config'
import { connectDatabase, type Sql } from '../src/db/connect'
import { resolveDatabase, type DatabaseTarget } from '../src/db/open'
import { createLogger } from '../src/log'

export interface BenchSetup {
  config: Config
  /** The server: its URL, and the embedded PostgreSQL when it was started here. */
  target: DatabaseTarget
  /** One connection to the server, for creating and dropping the benchmark's databases. */
  admin: Sql
  /** Ends `admin` and stops the embedded PostgreSQL, if any: what a benchmark's `finally` does last. */
  close(): Promise<void>
}

/**
 * @example const { config, target, admin, close } = await setUpBench()
 */
export async function setUpBench(): Promise<BenchSetup> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' })
  const target = await resolveDatabase(config, createLogger('warn'))
  const admin = connectDatabase(target.url, { max: 1 })
  const close = async () => {
    await admin.end()
    await target.embedded?.stop()
  }
  return { config, target, admin, close }
}
