import type { Change, ChangeHandlers } from '../cache/change-listener'
import type { EventMark } from '../changes/event-mark'
import { readChangesSince, type TypeChange } from '../changes/event-statement'
import type { Config, PurgeTarget } from '../config'
import { EVERY_ANSWER_TAG, listsTag, typeTag } from '../content/content-answer'
import type { Sql } from '../db/connect'
import type { Logger } from '../log'
import { takePurgeDuty } from './purge-duty'
import { PurgeQueue, type PurgeRequestCounts } from './purge-queue'
import type { PurgeApis } from './purge-targets'

/** The keys of the discovery answers (C46) a write to the languages, taxonomies or terms may alter. */
export const DISCOVERY_KEYS = ['languages', 'content-types', 'taxonomies']
/** Tables whose writes alter the discovery answers beyond the entries they reach. */
const DISCOVERY_TABLES = new Set(['languages', 'taxonomies', 'terms'])
/** After a failed read of the change log, the next try. */
const RETRY_MS = 1000
/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1

export interface EdgePurgerOptions {
  /** Reads the change log (the primary's pool). */
  sql: Sql
  targets: readonly PurgeTarget[]
  apis: PurgeApis
  log: Logger
  /** DATABASE_TIMEOUT_MS: each read of the change log, and the delay of the second purge. */
  timeoutMs: number
  /** How long keys wait for others before they are sent (default 0: the next turn of the event loop). */
  coalesceMs?: number
  /** C51: past this many pending keys at a target, they collapse. */
  maxPendingKeys?: number
}

/**
 * Keeps the caches in front of the service exact (C51): after each notified
 * change, and at each go-live, the keys of every answer it may have altered,
 * as the event feed reads them from the change log (src/changes/event-statement.ts):
 * `entry-{id}` and `lists-{slug}` for each entry written, `type-{slug}` for a
 * type written whole, the discovery keys for languages, taxonomies and terms,
 * everything (`vitrine`) for a content type written, once the listener is
 * back after a loss, and when this instance takes the purge duty over. Every
 * purge is sent again after DATABASE_TIMEOUT_MS: an answer computed before
 * the commit may have reached a cache after the first. It purges only while
 * it holds the duty (`takeDuty`, src/edge/purge-duty.ts).
 * @example const purger = new EdgePurger({ sql, targets, apis, log, timeoutMs: 5000 })
 */
export class EdgePurger implements ChangeHandlers {
  /** `vitrine_purge_requests_total{target,outcome}` (C53 will expose it). */
  readonly requestCounts: PurgeRequestCounts = new Map()
  readonly #options: Required<EdgePurgerOptions>
  readonly #queues: PurgeQueue[]
  #onDuty = false
  /** Counts the times the duty was taken or dropped: a read begun under another duty is nobody's. */
  #duty = 0
  /** Where the next read of the change log starts; null until the first read under the duty. */
  #mark: EventMark | null = null
  #types: string[] = []
  /** The types' slugs by id, as of the last read: a notification names its types by id. */
  #typeSlugs = new Map<number, string>()
  /** Everything is purged after the next read of the change log (a mark from which nothing is missed). */
  #everythingDue = false
  #listenerLost = false
  #reading: Promise<void> | null = null
  #readAgain = false
  #retry: ReturnType<typeof setTimeout> | undefined
  #goLive: ReturnType<typeof setTimeout> | undefined
  readonly #seconds = new Set<ReturnType<typeof setTimeout>>()
  #closed = false

  constructor(options: EdgePurgerOptions) {
    this.#options = { ...options, coalesceMs: options.coalesceMs ?? 0, maxPendingKeys: options.maxPendingKeys ?? 10_000 }
    const queueOptions = {
      apis: options.apis,
      log: options.log,
      coalesceMs: this.#options.coalesceMs,
      maxPendingKeys: this.#options.maxPendingKeys,
      collapse: () => [...this.#types.map(typeTag), ...DISCOVERY_KEYS],
      counts: this.requestCounts,
    }
    this.#queues = options.targets.map((target, index) => new PurgeQueue(target, queueOptions, `${target.kind}-${index}`))
  }

  /** `vitrine_purge_pending_keys`: keys waiting at every target. */
  get pendingKeys(): number {
    return this.#queues.reduce((sum, queue) => sum + queue.pendingKeys, 0)
  }

  /** This instance purges from now on, starting with everything: nobody may have purged since the last holder went. */
  takeDuty(): void {
    this.#duty++
    this.#onDuty = true
    this.#mark = null
    this.#everythingDue = true
    this.#requestRead()
  }

  /** Another instance may purge now; what is pending still goes out (purging twice is harmless). */
  dropDuty(): void {
    this.#duty++
    this.#onDuty = false
    this.#mark = null
    clearTimeout(this.#goLive)
    clearTimeout(this.#retry)
  }

  close(): void {
    this.#closed = true
    this.dropDuty()
    for (const timer of this.#seconds) clearTimeout(timer)
    for (const queue of this.#queues) queue.close()
  }

  onListening(): void {
    // Anything may have been written while nobody listened.
    if (this.#listenerLost) this.#everythingDue = true
    this.#listenerLost = false
    this.#requestRead()
  }

  onLost(): void {
    this.#listenerLost = true
  }

  onChange(change: Change): void {
    if (!this.#onDuty) return
    // Sent now: the notification comes after the commit; the entries the write reached come with the read.
    if (change.table === 'content_types') this.#purge([EVERY_ANSWER_TAG])
    else if (DISCOVERY_TABLES.has(change.table)) this.#purge(DISCOVERY_KEYS)
    else if (change.typeIds !== 'all') {
      // The lists of the types it names go now, without waiting for the read (on a busy database it waits its turn).
      const lists = [...change.typeIds].flatMap((typeId) => {
        const slug = this.#typeSlugs.get(typeId)
        return slug === undefined ? [] : [listsTag(slug)]
      })
      if (lists.length > 0) this.#purge(lists)
    }
    this.#requestRead()
  }

  onLanguages(): void {}

  #requestRead(): void {
    if (this.#closed || !this.#onDuty) return
    if (this.#reading) {
      this.#readAgain = true
      return
    }
    clearTimeout(this.#retry)
    this.#reading = this.#read().finally(() => {
      this.#reading = null
      if (this.#readAgain) {
        this.#readAgain = false
        this.#requestRead()
      }
    })
  }

  async #read(): Promise<void> {
    const since = this.#mark
    const duty = this.#duty
    const everything = this.#everythingDue
    this.#everythingDue = false
    let read
    try {
      read = await readChangesSince(this.#options.sql, since, { timeoutMs: this.#options.timeoutMs, heavy: false })
    } catch (error) {
      if (duty !== this.#duty) return
      if (everything) this.#everythingDue = true
      this.#options.log.warn('edge purge: the change log could not be read; trying again', { error })
      this.#retry = setTimeout(() => this.#requestRead(), RETRY_MS)
      return
    }
    if (duty !== this.#duty) return
    this.#mark = read.mark
    this.#types = read.types
    this.#typeSlugs = new Map(Object.entries(read.typeSlugs).map(([typeId, slug]) => [Number(typeId), slug]))
    const keys = purgeKeys(read.changes)
    if (everything) keys.push(EVERY_ANSWER_TAG)
    if (keys.length > 0) this.#purge(keys)
    clearTimeout(this.#goLive)
    if (read.nextGoLiveInMs !== null) this.#goLive = setTimeout(() => this.#requestRead(), Math.min(MAX_TIMER_MS, read.nextGoLiveInMs + 5))
  }

  /** Now, and once more after DATABASE_TIMEOUT_MS: by then every answer computed before the commit has left every instance. */
  #purge(keys: readonly string[]): void {
    for (const queue of this.#queues) queue.add(keys)
    const second = setTimeout(() => {
      this.#seconds.delete(second)
      for (const queue of this.#queues) queue.add(keys)
    }, this.#options.timeoutMs)
    this.#seconds.add(second)
  }
}

/**
 * The edge purge of one process (main.ts): the purger, to be told the
 * listener's changes, and its bid for the purge duty among the instances
 * sharing the database, on a connection of its own to `primaryUrl`.
 * `stop` gives the duty up first, so that another instance takes it over.
 * @example const edge = startEdgePurge({ sql, primaryUrl, settings, log }); listenForChanges(url, everyHandler([cache, edge.purger]), options)
 */
export function startEdgePurge(options: {
  sql: Sql
  primaryUrl: string
  settings: Pick<Config, 'purgeTargets' | 'databaseTimeoutMs'> & PurgeApis
  log: Logger
}): { purger: EdgePurger; stop(): Promise<void> } {
  const { sql, primaryUrl, settings, log } = options
  const purger = new EdgePurger({ sql, targets: settings.purgeTargets, apis: settings, log, timeoutMs: settings.databaseTimeoutMs })
  const duty = takePurgeDuty(primaryUrl, { timeoutMs: settings.databaseTimeoutMs, log, onTaken: () => purger.takeDuty(), onDropped: () => purger.dropDuty() })
  return {
    purger,
    async stop() {
      await duty.stop()
      purger.close()
    },
  }
}

/**
 * The keys of the answers the changes of one read may have altered: a type
 * told whole purges its key; an entry, its key and the type's lists (which
 * entries are live, and how many, may have changed with it).
 * @example purgeKeys([{ type: 'post', ids: [42] }, { type: 'page', ids: null }]) // ['lists-post', 'entry-42', 'type-page']
 */
export function purgeKeys(changes: readonly TypeChange[]): string[] {
  return changes.flatMap((change) => (change.ids === null ? [typeTag(change.type)] : [listsTag(change.type), ...change.ids.map((id) => `entry-${id}`)]))
}
