import { Elysia } from 'elysia'
import { withDeadline, type Sql } from '../db/connect'
import { pendingMigrations } from '../db/migrate'
import { HttpError } from './errors'
import { jsonResponse } from './json-response'

/**
 * `/healthz`: the process answers. `/readyz`: the database answers and its
 * schema is migrated; otherwise 503. Neither is logged at info level.
 */
export function healthRoutes(sql: Sql, timeoutMs: number) {
  return new Elysia({ name: 'health-routes' })
    .get('/healthz', () => jsonResponse({ status: 'ok' }))
    .get('/readyz', async () => {
      let pending: string[]
      try {
        pending = await withDeadline(pendingMigrations(sql), timeoutMs)
      } catch {
        // Whatever kept the probe from its answer (refused, 55000, 28P01, a hang), the instance is not ready.
        throw new HttpError(503, 'The database is not reachable.', { 'retry-after': '2' })
      }
      if (pending.length) throw new HttpError(503, 'The database schema is not migrated: run `bun run migrate`.', { 'retry-after': '30' })
      return jsonResponse({ status: 'ready' })
    })
}
