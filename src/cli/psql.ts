import { loadConfig } from '../config'
import { resolveDatabase } from '../db/open'
import { createLogger } from '../log'
import { runCommand } from './run'

/**
 * `bun run psql [psql arguments]`: `psql` on the service's database, as a
 * writer would use it (docs/writing-content.md): `DATABASE_URL`'s, or the
 * embedded one under `DATA_DIR` (the one a running service uses, or started
 * for the session and stopped after). Its exit status is psql's.
 */
runCommand(async (onFailure) => {
  const config = loadConfig(process.env)
  const psql = Bun.which('psql')
  if (!psql) {
    console.error('vitrine: psql is not installed: apt install postgresql-client (Debian, Ubuntu), brew install libpq (macOS).')
    process.exit(1)
  }
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel)
  const target = await resolveDatabase(config, log, onFailure, { joinRunning: true })
  let code: number
  try {
    // The password in the environment, not on the command line (where ps shows it to every user).
    const url = new URL(target.url)
    const password = decodeURIComponent(url.password)
    url.password = ''
    const env = { ...process.env, ...(password ? { PGPASSWORD: password } : {}) }
    const child = Bun.spawn([psql, url.toString(), ...process.argv.slice(2)], { env, stdin: 'inherit', stdout: 'inherit', stderr: 'inherit' })
    code = await child.exited
  } finally {
    await target.embedded?.stop()
  }
  process.exit(code)
})
