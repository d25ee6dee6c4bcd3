import { Type } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { AppDependencies } from '../app-dependencies'
import { withDeadline, type Sql } from '../db/connect'
import { pendingMigrations } from '../db/migrate'
import type { Logger } from '../log'
import { jsonResponse } from './json-response'
import { EVERY_ANSWER, errorResponse, headers, json, ref, type OpenApiDeclaration } from './openapi-declarations'

type Readiness = { state: 'ready' } | { state: 'not migrated'; pending: string[] } | { state: 'unreachable'; error: unknown }

/**
 * `/healthz`: the process answers. `/readyz`: the database answers and its
 * schema is migrated; otherwise 503. With DATABASE_READ_URLS it also lists the
 * replicas and whether each serves (C50). Neither is logged at info level; the
 * readiness is, once each time it changes (a probe every few seconds must not
 * repeat the same line, nor call an unmigrated database "unavailable").
 * @example new Elysia().use(healthRoutes({ sql, config, log }))
 */
export function healthRoutes({ sql, config, log, replicas }: Pick<AppDependencies, 'sql' | 'config' | 'log' | 'replicas'>) {
  const report = readinessReporter(log)
  return new Elysia({ name: 'health-routes' })
    .get('/healthz', () => jsonResponse({ status: 'ok' }))
    .get('/readyz', async ({ set }) => {
      const readiness = await checkReadiness(sql, config.databaseTimeoutMs)
      report(readiness)
      // C50: which replicas serve; the primary alone makes the instance ready.
      if (readiness.state === 'ready') return jsonResponse(replicas ? { status: 'ready', replicas: replicas.status } : { status: 'ready' })
      // Answered here, not thrown: the error handler would log every probe as a failure.
      set.status = 503
      set.headers['Retry-After'] = readiness.state === 'not migrated' ? '30' : '2'
      const error = readiness.state === 'not migrated' ? 'The database schema is not migrated: run `bun run migrate`.' : 'The database is not reachable.'
      return jsonResponse({ error }, 503)
    })
}

async function checkReadiness(sql: Sql, timeoutMs: number): Promise<Readiness> {
  let pending: string[]
  try {
    pending = await withDeadline(pendingMigrations(sql), timeoutMs)
  } catch (error) {
    // Whatever kept the probe from its answer (refused, 55000, 28P01, a hang), the instance is not ready.
    return { state: 'unreachable', error }
  }
  return pending.length ? { state: 'not migrated', pending } : { state: 'ready' }
}

/** Logs the readiness when it differs from the last one logged: ready at info, the others at warn. */
function readinessReporter(log: Logger): (readiness: Readiness) => void {
  let last: Readiness['state'] | undefined
  return (readiness) => {
    if (readiness.state === last) return
    last = readiness.state
    if (readiness.state === 'ready') log.info('ready: the database answers and its schema is migrated')
    else if (readiness.state === 'not migrated') log.warn('not ready: the database schema is not migrated: run `bun run migrate`', { pending: readiness.pending })
    else log.warn('not ready: the database is not reachable', { error: readiness.error })
  }
}

/**
 * The probes in the OpenAPI document. Change it with `healthRoutes` above.
 * @example healthOpenApi().paths['/readyz']
 */
export function healthOpenApi(): OpenApiDeclaration {
  return {
    schemas: {
      Status: Type.Object({ status: Type.String() }, { additionalProperties: false }),
      Readiness: Type.Object(
        {
          status: Type.Literal('ready'),
          replicas: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  name: Type.String({ description: 'host:port/database of a URL of DATABASE_READ_URLS.', examples: ['replica-1:5432/cms'] }),
                  serving: Type.Boolean({ description: 'In the rotation: content reads may go to it (C50).' }),
                  reason: Type.Optional(Type.String({ description: 'Why it does not serve: it failed, lags more than REPLICA_MAX_LAG_MS, or is not a standby.' })),
                },
                { additionalProperties: false },
              ),
              { description: 'Only with DATABASE_READ_URLS: each replica and whether it serves (C50).' },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    },
    paths: {
      '/healthz': {
        get: {
          operationId: 'checkLiveness',
          tags: ['operations'],
          summary: 'Liveness: the process answers',
          responses: { '200': { description: 'The process runs.', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Status'), { example: { status: 'ok' } }) } },
        },
      },
      '/readyz': {
        get: {
          operationId: 'checkReadiness',
          tags: ['operations'],
          summary: 'Readiness: the database answers and is migrated',
          responses: {
            '200': { description: 'Ready to serve (replicas out of the rotation or not, C50).', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Readiness'), { example: { status: 'ready' } }) },
            '503': errorResponse('The database cannot be reached, or has pending migrations.', ['The database is not reachable.'], [...EVERY_ANSWER, 'Retry-After']),
          },
        },
      },
    },
  }
}
