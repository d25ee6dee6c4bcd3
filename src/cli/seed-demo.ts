import { loadConfig } from '../config'
import { connectDatabase } from '../db/connect'
import { migrate } from '../db/migrate'
import { resolveDatabase } from '../db/open'
import { seedDemo } from '../demo/seed-demo'
import { createLogger } from '../log'
import { runCommand } from './run'

runCommand(async (onFailure) => {
  const config = loadConfig(process.env)
  const log = createLogger(config.logLevel)
  const target = await resolveDatabase(config, log, onFailure)
  const sql = connectDatabase(target.url, { max: 1, timeoutMs: config.databaseTimeoutMs })
  try {
    // The embedded database is ours to migrate; a team's own is migrated by `bun run migrate`.
    if (target.embedded) await migrate(sql)
    const { entries } = await seedDemo(sql)
    console.log(`Loaded the demo site: ${entries} entries.`)
  } finally {
    await sql.end()
    await target.embedded?.stop()
  }
}, { stopOnSignals: ['SIGTERM', 'SIGINT'], during: '' })
