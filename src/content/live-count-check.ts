import type { Sql } from '../db/connect'
import type { Logger } from '../log'
import { recordKeptDrift } from '../metrics/families'

/** A content type whose kept count of live entries, dated or undated, disagrees with count(*). */
export interface CountDrift {
  typeId: number
  type: string
  /** Which of the type's two counts: a page by number splits its offset between them. */
  undated: boolean
  counted: number
  kept: number
  /** A filter's kept count (C40, C41): `term:<id>` or `author:<id>`; absent for the type's own count. */
  filter?: string
}

/** The comparison counts every live entry: on a large site it may take longer than a request may. */
const CHECK_TIMEOUT = '5min'

/**
 * C18 when the kept counts drift (writes with the triggers disabled, see
 * sql/live-entry-counts.md): compares them with count(*) at start and every
 * LIVE_COUNT_CHECK_SECONDS, logs each type that drifted, and has the list
 * statement count that type's entries one by one until they agree again,
 * so `meta.total` stays exact either way. The kept counts per term and per
 * author (C40, C41) are compared too: a type whose filter counts drifted
 * has its filtered totals (and its own) counted one by one. `onChange` hears the types whose
 * way of counting changed (the cache drops their answers).
 * @example const check = new LiveCountCheck(sql, log, (typeIds) => cache.onChange({ table: 'live_entry_count_deltas', typeIds }))
 */
export class LiveCountCheck {
  #drifted = new Map<string, CountDrift[]>()
  #timer: ReturnType<typeof setInterval> | undefined
  #running: Promise<void> | undefined

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    private readonly onChange: (typeIds: number[]) => void = () => {},
  ) {}

  /** Whether the list statement counts this type's entries one by one. */
  countByScan(type: string): boolean {
    return this.#drifted.has(type)
  }

  /** The types whose entries are counted one by one, by slug (byte order): what a count over every type must scan. */
  driftedTypes(): string[] {
    return [...this.#drifted.keys()].sort()
  }

  /** Checks now, then every `intervalMs` (0: never again). */
  start(intervalMs: number): void {
    void this.check()
    if (intervalMs > 0) this.#timer = setInterval(() => void this.check(), intervalMs)
  }

  stop(): void {
    clearInterval(this.#timer)
  }

  /** One comparison; a failure (the database away) keeps what the last one found. Concurrent calls share one. */
  check(): Promise<void> {
    this.#running ??= this.#compare().finally(() => (this.#running = undefined))
    return this.#running
  }

  async #compare(): Promise<void> {
    let rows: CountDrift[]
    try {
      rows = await this.sql.begin(async (tx) => {
        await tx`select set_config('statement_timeout', ${CHECK_TIMEOUT}, true)`
        const types = await tx<CountDrift[]>`
          select d.content_type_id as "typeId", ct.slug as type, d.undated, d.counted, d.kept
          from vitrine_live_entry_count_drift() d
          join content_types ct on ct.id = d.content_type_id
        `
        // The kept counts per term and per author (sql/live-entry-counts.md, "Filtered lists").
        const filters = await tx<CountDrift[]>`
          select d.content_type_id as "typeId", ct.slug as type, d.undated, d.counted, d.kept, d.kind || ':' || d.key as filter
          from vitrine_live_filter_count_drift() d
          join content_types ct on ct.id = d.content_type_id
        `
        return [...types, ...filters]
      })
    } catch (error) {
      // The database away is logged by the requests that need it (C22); anything else is this check's own.
      const code = (error as { code?: string }).code ?? ''
      const unreachable = !/^[0-9A-Z]{5}$/.test(code) || /^(08|53|57P|3D|28)/.test(code)
      this.log[unreachable ? 'debug' : 'warn']('could not compare the kept live entry counts with count(*): the next check tries again', { error })
      return
    }
    // C56: reported with the other kept structures (kept-drift-check.ts).
    recordKeptDrift('live_entry_counts', rows.filter((row) => row.filter === undefined).length)
    recordKeptDrift('filter_counts', rows.filter((row) => row.filter !== undefined).length)
    const found = new Map<string, CountDrift[]>()
    for (const row of rows) found.set(row.type, [...(found.get(row.type) ?? []), row])
    const changed: number[] = []
    for (const [type, drifts] of found) {
      if (this.#drifted.has(type)) continue
      changed.push(drifts[0]!.typeId)
      for (const drift of drifts) {
        this.log.error('the kept count of live entries drifted: counting this type one by one until it is repaired (select vitrine_repair_live_entry_counts())', { ...drift })
      }
    }
    for (const [type, drifts] of this.#drifted) {
      if (found.has(type)) continue
      changed.push(drifts[0]!.typeId)
      this.log.info('the kept count of live entries agrees again', { type, typeId: drifts[0]!.typeId })
    }
    this.#drifted = found
    if (changed.length) this.onChange(changed)
  }
}
