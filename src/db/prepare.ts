import { seedDemo } from '../demo/seed-demo'
import type { Logger } from '../log'
import { connectDatabase, type Sql } from './connect'
import { migrate, pendingMigrations } from './migrate'
import type { DatabaseTarget } from './open'

/**
 * The embedded database is this process's own: keep it migrated, and give a new
 * user something to look at on the very first run; writes go through a connection
 * of their own (the service's pool is read-only). A database of yours is only
 * checked: `bun run migrate` is yours to run.
 * @example await prepareDatabase(sql, await resolveDatabase(config, log), config.databaseTimeoutMs, log)
 */
export async function prepareDatabase(sql: Sql, target: DatabaseTarget, timeoutMs: number, log: Logger): Promise<void> {
  if (!target.embedded) {
    const pending = await pendingMigrations(sql).catch(() => [])
    if (pending.length) log.warn('the database has pending migrations: run `bun run migrate`', { pending })
    return
  }
  const admin = connectDatabase(target.url, { max: 1, timeoutMs })
  try {
    const applied = await migrate(admin)
    if (applied.length) log.info('migrated the embedded database', { applied })
    if (target.embedded.created) {
      const { entries } = await seedDemo(admin)
      log.info('loaded the demo content', { entries })
    }
  } finally {
    await admin.end()
  }
}
