import { Elysia } from 'elysia'
import type { Config } from './config'
import type { Sql } from './db/connect'
import { requestPolicy, JSON_CONTENT_TYPE } from './http/request-policy'
import type { Logger } from './log'

export interface AppDependencies {
  sql: Sql
  config: Config
  log: Logger
}

/**
 * The whole HTTP service, not listening: `main.ts` serves it, tests call `app.handle(request)`.
 * @example const response = await createApp(deps).handle(new Request('http://localhost/healthz'))
 */
export function createApp({ log }: AppDependencies) {
  return new Elysia({ name: 'vitrine', normalize: false })
    .use(requestPolicy(log))
    .get('/healthz', ({ set }) => {
      set.headers['content-type'] = JSON_CONTENT_TYPE
      return { status: 'ok' }
    })
}

export type App = ReturnType<typeof createApp>
