import { loadConfig } from '../config'
import { connectDatabase } from '../db/connect'
import { migrate } from '../db/migrate'
import { resolveDatabase } from '../db/open'
import { createLogger } from '../log'
import { runCommand } from './run'

runCommand(async (onFailure) => {
  const config = loadConfig(process.env)
  const log = createLogger(config.logLevel)
  const target = await resolveDatabase(config, log, onFailure)
  const sql = connectDatabase(target.url, { max: 1, timeoutMs: config.databaseTimeoutMs })
  try {
    const applied = await migrate(sql)
    console.log(applied.length ? `Applied ${applied.join(', ')}.` : 'Nothing to migrate: the schema is up to date.')
  } finally {
    await sql.end()
    await target.embedded?.stop()
  }
}, { stopOnSignals: ['SIGTERM', 'SIGINT'], during: '' })
