import postgres from 'postgres'
import type { ChangeHandlers } from '../cache/change-listener'
import type { EventMark } from '../changes/event-mark'
import type { Config } from '../config'
import { takeDuty } from '../db/duty'
import type { Logger } from '../log'
import { recordWebhookDelivery, watchWebhookQueues, type WebhookQueue } from '../metrics/families'
import { entryMessage, gather, gatheredMessage, newMessageId, type Gathered } from './messages'
import { safeUrl, sendMessage, type Attempt } from './send'
import { readEntryChanges, readMarkNow, type EntryChange } from './webhook-statement'

/** The advisory lock key of the webhook duty: one delivering instance per database (C57). */
export const WEBHOOK_DUTY_LOCK = 5_105_105_102
/** C57: after a failed attempt, the next one after these delays, then every 2 hours. */
export const RETRY_SCHEDULE_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000]
const LATER_RETRY_MS = 7_200_000
/** C57: a message not delivered this long after its first attempt is given up. */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000
/** A debounced endpoint is told at least this often under a steady stream of writes (or 10 × its debounce). */
const LONGEST_WINDOW_MS = 60_000
/** Messages of one endpoint read at once, then sent one after the other. */
const BATCH = 100
/** While on duty, the queues, windows and the endpoints' rows are looked at this often, writes or not. */
const TICK_MS = 5_000
/** After a failed read or write of the service's tables, the next try. */
const RETRY_MS = 1_000
const MAX_TIMER_MS = 2 ** 31 - 1

export interface WebhookDeliveryOptions {
  /** A read-write connection to the primary: the only writer of webhook_reader, webhook_positions and webhook_deliveries. */
  sql: postgres.Sql
  log: Logger
  /** PUBLIC_URL: the origin of the single-entry URLs in messages. */
  publicUrl: string
  /** WEBHOOK_ALLOW_PRIVATE (C57). */
  allowPrivate: boolean
  /** SYNC_RETENTION_DAYS: go-lives further back than this are not looked for. */
  retentionDays: number
  /** C57's 15 s; the tests shorten it. */
  attemptTimeoutMs?: number
  /** The role may not write the webhook tables: give the duty up. */
  onForbidden?: () => void
}

interface Endpoint {
  id: number
  types: string[] | null
  debounce_ms: number
  active: boolean
}

interface Pending {
  id: string
  message_id: string
  body: string
  url: string
  secret: string | null
  version: string
  attempts: number
  first_attempt_ms: number | null
  wait_ms: number
}

/**
 * Webhooks (C57) in one process: while it holds the webhook duty, it turns
 * what the change log says (and the clock's go-lives) into messages, stored
 * in the same transaction as the reader's new mark, then delivers each
 * endpoint's messages in order, one at a time, retrying on the schedule.
 * Stored first, sent after: a crash, a restart or another instance taking the
 * duty over sends what was pending; only a message in flight may be sent twice.
 * @example const delivery = new WebhookDelivery({ sql, log, publicUrl, allowPrivate: false, retentionDays: 30 })
 */
export class WebhookDelivery implements ChangeHandlers {
  readonly #options: WebhookDeliveryOptions
  #onDuty = false
  /** Counts the times the duty was taken or dropped: work begun under another duty is nobody's. */
  #duty = 0
  #reading: Promise<void> | null = null
  #readAgain = false
  #closed = false
  /** The role may not write the webhook tables: nothing is read or delivered until a restart. */
  #forbidden = false
  readonly #runners = new Map<number, { again: boolean }>()
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()
  /** Each endpoint's one timer for its next run, with when it fires (performance.now()). */
  readonly #runTimers = new Map<number, { timer: ReturnType<typeof setTimeout>; at: number }>()
  #goLive: ReturnType<typeof setTimeout> | undefined
  #tick: ReturnType<typeof setInterval> | undefined
  #queues: WebhookQueue[] = []
  /** When every queue was last looked at (performance.now()). */
  #lookedAt = -Infinity

  constructor(options: WebhookDeliveryOptions) {
    this.#options = options
    watchWebhookQueues(() => (this.#onDuty ? this.#queues : []))
  }

  takeDuty(): void {
    this.#duty++
    this.#onDuty = true
    this.#requestRead()
    clearInterval(this.#tick)
    this.#tick = setInterval(() => this.#requestRead(), TICK_MS)
  }

  dropDuty(): void {
    this.#duty++
    this.#onDuty = false
    clearInterval(this.#tick)
    clearTimeout(this.#goLive)
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
    this.#runTimers.clear()
  }

  close(): void {
    this.#closed = true
    this.dropDuty()
  }

  onListening(): void {
    this.#requestRead()
  }

  onLost(): void {}

  onChange(): void {
    this.#requestRead()
  }

  onLanguages(): void {}

  #requestRead(): void {
    if (this.#closed || !this.#onDuty || this.#forbidden) return
    if (this.#reading) {
      this.#readAgain = true
      return
    }
    this.#reading = this.#read().finally(() => {
      this.#reading = null
      if (this.#readAgain) {
        this.#readAgain = false
        this.#requestRead()
      }
    })
  }

  /** One read of the change log into messages (and closed windows), committed with the reader's new mark; then delivery. */
  async #read(): Promise<void> {
    const duty = this.#duty
    const started = performance.now()
    let nextGoLiveInMs = null as number | null
    let windowDueInMs = null as number | null
    const told = new Set<number>()
    try {
      // Repeatable read: the endpoints and the change log from one snapshot, so that a change committed after an
      // endpoint was added is read with that endpoint, never consumed before it is seen.
      await this.#options.sql.begin('isolation level repeatable read', async (tx) => {
        // The reader's mark (locked), the endpoints and whether any window is gathering, in one statement.
        const [state] = await tx<{ mark: EventMark | null; endpoints: Endpoint[]; gathering: boolean }[]>`
          select
            (
              select json_build_object(
                'position', r.position::text,
                'inProgress', (select coalesce(json_agg(x::text), '[]'::json) from unnest(r.in_progress) x),
                'atMicros', (extract(epoch from r.read_at) * 1000000)::int8::text
              )
              from webhook_reader r
              for update
            ) as mark,
            (
              select coalesce(json_agg(json_build_object(
                'id', w.id, 'types', w.types, 'debounce_ms', w.debounce_ms,
                'active', w.enabled and (p.gone_version is null or p.gone_version <> w.xmin::text)
              ) order by w.id), '[]'::json)
              from webhooks w
              left join webhook_positions p on p.webhook_id = w.id
            ) as endpoints,
            exists (select 1 from webhook_positions where gathered is not null) as gathering
        `
        const reader = state!.mark === null ? undefined : { mark: state!.mark }
        const endpoints = state!.endpoints
        const active = endpoints.filter((endpoint) => endpoint.active)
        // C57: a disabled endpoint is told nothing, not even what was pending or gathered.
        const inactive = endpoints.filter((each) => !each.active).map((each) => each.id)
        if (inactive.length > 0) {
          await tx`
            with dropped as (delete from webhook_deliveries where webhook_id = any (${inactive}::int8[]))
            update webhook_positions set gathered = null, gathering_since = null, last_change_at = null
            where webhook_id = any (${inactive}::int8[]) and gathered is not null
          `
        }
        let mark: EventMark
        let changes: EntryChange[] = []
        if (!reader || active.length === 0) {
          // The first instance ever starts from now (C57: an endpoint is told of what comes after it was added); with
          // nobody to tell, the reader moves on without reading.
          const now = await readMarkNow(tx)
          mark = now.mark
          nextGoLiveInMs = now.nextGoLiveInMs
        } else {
          // C57: go-lives are looked for within SYNC_RETENTION_DAYS, as a sync token's.
          const oldest = BigInt(Date.now() - this.#options.retentionDays * 86_400_000) * 1000n
          const since = BigInt(reader.mark!.atMicros) < oldest ? { ...reader.mark!, atMicros: oldest.toString() } : reader.mark!
          const read = await readEntryChanges(tx, since)
          if (read.prunedBeforeMicros !== null && BigInt(read.prunedBeforeMicros) > BigInt(reader.mark!.atMicros)) {
            this.#options.log.error('webhooks: the change log was pruned past where the delivery stopped; changes before the cut may not be told', { stoppedAt: new Date(Number(BigInt(reader.mark!.atMicros) / 1000n)).toISOString() })
          }
          mark = read.mark
          changes = read.changes
          nextGoLiveInMs = read.nextGoLiveInMs
        }
        const messages: { webhook: number; id: string; body: string }[] = []
        const gatheredNow: { webhook: number; gathered: Gathered }[] = []
        if (changes.length > 0) {
          const debounced = active.filter((endpoint) => endpoint.debounce_ms > 0)
          const held = new Map<number, Gathered | null>()
          if (debounced.length > 0) {
            const rows = await tx<{ webhook_id: number; gathered: Gathered | null }[]>`
              select webhook_id::float8 as webhook_id, gathered from webhook_positions where webhook_id = any (${debounced.map((each) => each.id)}::int8[]) for update
            `
            for (const row of rows) held.set(row.webhook_id, row.gathered)
          }
          for (const endpoint of active) {
            const theirs = endpoint.types === null ? changes : changes.filter((change) => endpoint.types!.includes(change.type))
            if (theirs.length === 0) continue
            if (endpoint.debounce_ms > 0) gatheredNow.push({ webhook: endpoint.id, gathered: gather(held.get(endpoint.id) ?? null, theirs) })
            else for (const change of theirs) messages.push({ webhook: endpoint.id, id: newMessageId(), body: entryMessage(change, this.#options.publicUrl) })
          }
        }
        if (gatheredNow.length > 0) {
          await tx`
            insert into webhook_positions (webhook_id, gathered, gathering_since, last_change_at)
            select (g->>'webhook')::int8, g->'gathered', now(), now()
            from json_array_elements(${JSON.stringify(gatheredNow)}::text::json) g
            on conflict (webhook_id) do update
              set gathered = excluded.gathered,
                gathering_since = coalesce(webhook_positions.gathering_since, now()),
                last_change_at = now()
          `
        }
        // Windows that closed: quiet for debounce_ms, or open for max(10 × debounce_ms, 60 s).
        const windows = !state!.gathering && gatheredNow.length === 0 ? [] : await tx<{ webhook_id: number; gathered: Gathered; due_in_ms: number; now_ms: number }[]>`
          select p.webhook_id::float8 as webhook_id, p.gathered,
            greatest(0, extract(epoch from least(
              p.last_change_at + w.debounce_ms * interval '1 millisecond',
              p.gathering_since + greatest(10::int8 * w.debounce_ms, ${LONGEST_WINDOW_MS}::int8) * interval '1 millisecond'
            ) - now()) * 1000)::float8 as due_in_ms,
            (extract(epoch from now()) * 1000)::float8 as now_ms
          from webhook_positions p
          join webhooks w on w.id = p.webhook_id
          where p.gathered is not null
            and w.enabled
          for update of p
        `
        const closed = windows.filter((window) => window.due_in_ms <= 0)
        for (const window of closed) messages.push({ webhook: window.webhook_id, id: newMessageId(), body: gatheredMessage(window.gathered, window.now_ms) })
        if (closed.length > 0) {
          await tx`update webhook_positions set gathered = null, gathering_since = null, last_change_at = null where webhook_id = any (${closed.map((each) => each.webhook_id)}::int8[])`
        }
        const open = windows.filter((window) => window.due_in_ms > 0).map((window) => window.due_in_ms)
        windowDueInMs = open.length > 0 ? Math.min(...open) : null
        for (const message of messages) told.add(message.webhook)
        // The messages and the reader's new mark in one statement.
        await tx`
          with stored as (
            insert into webhook_deliveries (webhook_id, message_id, body)
            select (m->>'webhook')::int8, m->>'id', m->>'body'
            from json_array_elements(${JSON.stringify(messages)}::text::json) with ordinality as x(m, n)
            order by n
          )
          insert into webhook_reader (position, in_progress, read_at)
          values (${mark.position}::int8, ${`{${mark.inProgress.join(',')}}`}::xid8[], 'epoch'::timestamptz + ${mark.atMicros}::int8 * interval '1 microsecond')
          on conflict (one) do update set position = excluded.position, in_progress = excluded.in_progress, read_at = excluded.read_at
        `
      })
    } catch (error) {
      if (duty !== this.#duty) return
      if ((error as { code?: string }).code === '42501') {
        // A role that may only read (docs/operations.md): it cannot keep the webhook tables, so there are no webhooks.
        this.#options.log.warn('webhooks: this database role may not write the webhook tables, so no webhook is delivered; grant it their rights to deliver them (docs/webhooks.md, "Permissions")', { error })
        this.#forbidden = true
        // Another instance, under a role that may, takes the duty.
        this.#options.onForbidden?.()
        return
      }
      this.#options.log.warn('webhooks: the change log could not be read into messages; trying again', { error })
      this.#later(() => this.#requestRead(), RETRY_MS)
      return
    }
    if (duty !== this.#duty) return
    this.#options.log.debug('webhooks: read', { ms: Math.round(performance.now() - started) })
    clearTimeout(this.#goLive)
    const next = [nextGoLiveInMs, windowDueInMs].filter((ms): ms is number => ms !== null)
    if (next.length > 0) this.#goLive = setTimeout(() => this.#requestRead(), Math.min(MAX_TIMER_MS, Math.min(...next) + 5))
    // The endpoints just told go at once; every queue (retries due, the metrics' counts) is looked at once a tick.
    for (const webhookId of told) this.#run(webhookId)
    if (performance.now() - this.#lookedAt >= TICK_MS) await this.#deliver()
  }

  /** Starts a runner for each endpoint with messages pending (one per endpoint: its messages go in order). */
  async #deliver(): Promise<void> {
    const duty = this.#duty
    this.#lookedAt = performance.now()
    let queues: (WebhookQueue & { webhook_id: number })[]
    try {
      queues = await this.#options.sql<(WebhookQueue & { webhook_id: number })[]>`
        select webhook_id::float8 as webhook_id, webhook_id::text as webhook, count(*)::float8 as pending,
          (extract(epoch from min(created_at)) * 1000)::float8 as oldest_ms
        from webhook_deliveries
        group by webhook_id
      `
    } catch (error) {
      if (duty === this.#duty) this.#options.log.warn('webhooks: the pending messages could not be read; trying again', { error })
      return
    }
    if (duty !== this.#duty) return
    this.#queues = queues
    for (const queue of queues) this.#run(queue.webhook_id)
  }

  #run(webhookId: number): void {
    const running = this.#runners.get(webhookId)
    if (running) {
      running.again = true
      return
    }
    const state = { again: false }
    this.#runners.set(webhookId, state)
    void this.#runEndpoint(webhookId, this.#duty).then(
      () => this.#ran(webhookId, state),
      (error) => {
        this.#options.log.error('webhooks: delivery failed; trying again', { webhook: webhookId, error })
        this.#runLater(webhookId, RETRY_MS)
        this.#ran(webhookId, state)
      },
    )
  }

  #ran(webhookId: number, state: { again: boolean }): void {
    this.#runners.delete(webhookId)
    if (state.again && this.#onDuty) this.#run(webhookId)
  }

  /** The endpoint's messages in order, while they succeed; a failure schedules its retry and stops there. */
  async #runEndpoint(webhookId: number, duty: number): Promise<void> {
    const sql = this.#options.sql
    while (duty === this.#duty && this.#onDuty) {
      const batch = await sql<Pending[]>`
        select d.id::text as id, d.message_id, d.body, w.url, w.secret, w.xmin::text as version, d.attempts,
          (extract(epoch from d.first_attempt_at) * 1000)::float8 as first_attempt_ms,
          greatest(0, extract(epoch from d.next_attempt_at - now()) * 1000)::float8 as wait_ms
        from webhook_deliveries d
        join webhooks w on w.id = d.webhook_id
        left join webhook_positions p on p.webhook_id = w.id
        where d.webhook_id = ${webhookId}::int8
          and w.enabled
          and (p.gone_version is null or p.gone_version <> w.xmin::text)
        order by d.id
        limit ${BATCH}
      `
      if (batch.length === 0) return
      for (const message of batch) {
        if (duty !== this.#duty) return
        if (message.wait_ms > 0) {
          this.#runLater(webhookId, message.wait_ms)
          return
        }
        // C57: an endpoint disabled (or deleted) while its batch is sent is told nothing more.
        if (batch.indexOf(message) > 0) {
          const [still] = await sql<{ active: boolean }[]>`
            select w.enabled and (p.gone_version is null or p.gone_version <> w.xmin::text) as active
            from webhooks w left join webhook_positions p on p.webhook_id = w.id
            where w.id = ${webhookId}::int8
          `
          if (!still?.active) return
        }
        const attemptedAt = Date.now()
        const attempt = await sendMessage({ url: message.url, secret: message.secret, id: message.message_id, body: message.body }, { allowPrivate: this.#options.allowPrivate, timeoutMs: this.#options.attemptTimeoutMs })
        if (!(await this.#settle(webhookId, message, attempt, attemptedAt))) return
      }
      // A short batch was the whole queue; messages stored since ran #run, which runs this again.
      if (batch.length < BATCH) return
    }
  }

  /** Records an attempt's outcome; true when the next message may go now. */
  async #settle(webhookId: number, message: Pending, attempt: Attempt, attemptedAt: number): Promise<boolean> {
    const sql = this.#options.sql
    const where = { webhook: webhookId, url: safeUrl(message.url), message: message.message_id }
    if (attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300) {
      await sql`delete from webhook_deliveries where id = ${message.id}::int8`
      recordWebhookDelivery(webhookId, 'delivered')
      return true
    }
    if (attempt.status === 410) {
      // C57: gone: disabled until its row is updated (its version changes), with everything it had pending.
      const disabled = await sql.begin(async (tx) => {
        // Only the row's version that answered: a row updated meanwhile (a new URL) is not disabled, nor its queue dropped.
        const gone = await tx`
          insert into webhook_positions (webhook_id, gone_version)
          select w.id, w.xmin::text from webhooks w where w.id = ${webhookId}::int8 and w.xmin::text = ${message.version}
          on conflict (webhook_id) do update set gone_version = excluded.gone_version, gathered = null, gathering_since = null, last_change_at = null
        `
        if (gone.count > 0) await tx`delete from webhook_deliveries where webhook_id = ${webhookId}::int8`
        return gone.count > 0
      })
      if (!disabled) return true
      recordWebhookDelivery(webhookId, 'gone')
      this.#options.log.warn('webhooks: an endpoint answered 410 Gone; it is disabled until its row in webhooks is updated', where)
      return false
    }
    const firstAttemptMs = message.first_attempt_ms ?? attemptedAt
    const outcome = attempt.status !== undefined ? `status ${attempt.status}` : attempt.error ?? 'failed'
    if (Date.now() - firstAttemptMs >= GIVE_UP_AFTER_MS) {
      await sql`delete from webhook_deliveries where id = ${message.id}::int8`
      recordWebhookDelivery(webhookId, 'given_up')
      this.#options.log.error('webhooks: a message was given up, 24 hours after its first attempt', { ...where, attempts: message.attempts + 1, outcome })
      return true
    }
    // C57's Retry-After, at least a second (a 0 would be a loop); the last attempt at 24 h after the first.
    const scheduled = attempt.retryAfterMs === undefined ? retryDelayMs(message.attempts) : Math.max(1000, attempt.retryAfterMs)
    const delayMs = Math.max(0, Math.min(scheduled, firstAttemptMs + GIVE_UP_AFTER_MS - Date.now()))
    await sql`
      update webhook_deliveries
      set attempts = attempts + 1,
        first_attempt_at = coalesce(first_attempt_at, 'epoch'::timestamptz + ${attemptedAt}::int8 * interval '1 millisecond'),
        next_attempt_at = now() + ${Math.round(delayMs)}::int8 * interval '1 millisecond',
        last_outcome = ${outcome}
      where id = ${message.id}::int8
    `
    recordWebhookDelivery(webhookId, 'failed')
    this.#options.log.warn('webhooks: an attempt failed; it is retried with the same id', { ...where, outcome, retryInMs: Math.round(delayMs) })
    this.#runLater(webhookId, delayMs)
    return false
  }

  /** The endpoint's runner again after `ms`: one timer per endpoint, the earliest kept. */
  #runLater(webhookId: number, ms: number): void {
    const at = performance.now() + ms
    const pending = this.#runTimers.get(webhookId)
    if (pending && pending.at <= at) return
    if (pending) {
      clearTimeout(pending.timer)
      this.#timers.delete(pending.timer)
    }
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      this.#runTimers.delete(webhookId)
      if (this.#onDuty) this.#run(webhookId)
    }, Math.min(MAX_TIMER_MS, ms))
    this.#timers.add(timer)
    this.#runTimers.set(webhookId, { timer, at })
  }

  #later(work: () => void, ms: number): void {
    if (this.#closed) return
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      if (this.#onDuty) work()
    }, Math.min(MAX_TIMER_MS, ms))
    this.#timers.add(timer)
  }
}

/**
 * C57's schedule: the delay after the failed attempt that was the `attempts + 1`th, ±10% after the sixth.
 * @example retryDelayMs(0) // 5000
 */
export function retryDelayMs(attempts: number): number {
  const fixed = RETRY_SCHEDULE_MS[attempts]
  if (fixed !== undefined) return fixed
  return LATER_RETRY_MS * (0.9 + Math.random() * 0.2)
}

/**
 * The delivery of webhooks by one process (main.ts): its bid for the webhook
 * duty among the instances sharing the database, on a connection of its own
 * to `primaryUrl`, and a read-write connection for the service's webhook
 * tables. `stop` gives the duty up first, so that another instance takes it
 * over within seconds.
 * @example const webhooks = startWebhookDelivery({ primaryUrl, settings, log }); listenForChanges(url, everyHandler([cache, webhooks.delivery]), options)
 */
export function startWebhookDelivery(options: {
  primaryUrl: string
  settings: Pick<Config, 'databaseTimeoutMs' | 'publicUrl' | 'webhookAllowPrivate' | 'syncRetentionDays'>
  log: Logger
}): { delivery: WebhookDelivery; stop(): Promise<void> } {
  const { primaryUrl, settings, log } = options
  const sql = postgres(primaryUrl, {
    max: 1,
    connect_timeout: Math.max(1, Math.ceil(settings.databaseTimeoutMs / 1000)),
    onnotice: () => {},
    // JIT off: the read of the change log is cheap but its estimates can be huge (a table not analyzed yet:
    // 83 million for 3 ms of work), and PostgreSQL then spent 610 ms compiling it, at every read.
    connection: { application_name: 'vitrine-webhooks', statement_timeout: Math.max(30_000, settings.databaseTimeoutMs), jit: 'off' },
  })
  let forbidden = () => {}
  const delivery = new WebhookDelivery({ sql, log, publicUrl: settings.publicUrl, allowPrivate: settings.webhookAllowPrivate, retentionDays: settings.syncRetentionDays, onForbidden: () => forbidden() })
  const duty = takeDuty(primaryUrl, {
    lock: WEBHOOK_DUTY_LOCK,
    name: 'webhooks',
    applicationName: 'vitrine-webhook-duty',
    timeoutMs: settings.databaseTimeoutMs,
    log,
    onTaken: () => delivery.takeDuty(),
    onDropped: () => delivery.dropDuty(),
  })
  forbidden = () => void duty.stop()
  return {
    delivery,
    async stop() {
      await duty.stop()
      delivery.close()
      await sql.end({ timeout: 1 })
    },
  }
}
