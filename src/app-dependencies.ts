import type { AnswerCache } from './cache/answer-slot'
import type { NextGoLives } from './cache/next-go-lives'
import type { EventFeed } from './changes/event-feed'
import type { Config } from './config'
import type { LiveCountCheck } from './content/live-count-check'
import type { Sql } from './db/connect'
import type { ReadReplicas } from './db/replicas'
import type { FilterRegistry } from './hooks/registry'
import type { Logger } from './log'

/**
 * What the routes get: the database, the settings, the log, and the optional
 * parts `main.ts` builds (cache, event feed, replicas). It sits below the
 * routes and `app.ts`, so that a route never imports the file that imports it.
 * @example contentRoutes({ sql, config, log }, slot).routes
 */
export interface AppDependencies {
  sql: Sql
  config: Config
  log: Logger
  /** The filter hook's callbacks; none by default. */
  filters?: FilterRegistry
  /** The response cache (C35); without it every answer is loaded (X-Cache: BYPASS). */
  cache?: AnswerCache
  /** Which types' live entries are counted one by one, their kept count having drifted (C18); none without it. */
  liveCounts?: LiveCountCheck
  /** The event stream's feed (C49); without it, the stream answers 503. */
  events?: EventFeed
  /** The address of the connection a request came on (C52's client; the server's; none in process, under tests). */
  peerAddress?: (request: Request) => string | null
  /** Closes the connection a request came on, at once (the server's; none in process, under tests). */
  closeConnection?: (request: Request) => void
  /** C36: the types' next go-lives, kept while the change listener hears every write; without it, each statement reads its type's. */
  goLives?: NextGoLives
  /** DATABASE_READ_URLS (C50): the replicas `sql`'s content reads are routed through; /readyz says which serve. */
  replicas?: ReadReplicas
}
