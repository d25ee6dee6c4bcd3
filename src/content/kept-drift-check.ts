import type { Sql } from '../db/connect'
import type { Logger } from '../log'
import { recordKeptDrift } from '../metrics/families'

/** Entries whose kept rows one check compares (sql/any-writer.md, "Drift"): a slice costs about the same at any size. */
export const DRIFT_SLICE_ENTRIES = 2000

/**
 * The first id of the slice that holds `id`: slices are fixed ranges of ids, so a slice found
 * drifted is the same slice when it is checked again, whatever entries come and go.
 * @example sliceStart(4321) // 4000
 */
export function sliceStart(id: number): number {
  return Math.floor(id / DRIFT_SLICE_ENTRIES) * DRIFT_SLICE_ENTRIES
}

/** What the live count check (live-count-check.ts) does not already compare: the structures kept per entry, the term lists, the triggers. */
const STRUCTURES = ['triggers', 'term_lists', 'entry_guards', 'search_documents', 'search_postings', 'search_prefixes'] as const
type Structure = (typeof STRUCTURES)[number]

/** A check may read every term and recompute a slice's search vectors: more than a request may take. */
const CHECK_TIMEOUT = '5min'

/**
 * C56: the structures the service keeps beside the data model, compared with
 * the base tables on a timer (with the live counts, LIVE_COUNT_CHECK_SECONDS):
 * the triggers' state and the term lists whole, the rows kept per entry
 * (guards, search documents and postings) one slice of DRIFT_SLICE_ENTRIES
 * ids a time (fixed ranges: sliceStart), in id order, starting again at the
 * lowest after the highest. Each structure's drifted rows are reported
 * (`vitrine_kept_drift{structure}`, the slice's kept until it is checked
 * again), and one warning names the repair when a structure starts to drift.
 * Answers never depend on it: C1 is checked on each entry's own row.
 * @example const check = new KeptDriftCheck(sql, log); check.start(600_000)
 */
export class KeptDriftCheck {
  #timer: ReturnType<typeof setInterval> | undefined
  #running: Promise<void> | undefined
  /** The first entry id of the next slice. */
  #next: number | null = null
  /** Per structure, its drifted rows per slice start (one entry for the structures checked whole). */
  #drifted = new Map<Structure, Map<number, number>>()

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  /** Checks now, then every `intervalMs` (0: never again). */
  start(intervalMs: number): void {
    void this.check()
    if (intervalMs > 0) this.#timer = setInterval(() => void this.check(), intervalMs)
  }

  stop(): void {
    clearInterval(this.#timer)
  }

  /** The drifted rows of each structure, as last found. */
  drifted(): Record<Structure, number> {
    return Object.fromEntries(STRUCTURES.map((structure) => [structure, [...(this.#drifted.get(structure)?.values() ?? [])].reduce((a, b) => a + b, 0)])) as Record<Structure, number>
  }

  /** One check of the next slice; a failure (the database away) keeps what the last one found. Concurrent calls share one. */
  check(): Promise<void> {
    this.#running ??= this.#compare().finally(() => (this.#running = undefined))
    return this.#running
  }

  async #compare(): Promise<void> {
    let found: { structure: Structure; drifted: number }[]
    let first = 0
    try {
      found = await this.sql.begin(async (tx) => {
        await tx`select set_config('statement_timeout', ${CHECK_TIMEOUT}, true)`
        // The ids of entries and of what is kept for them (a guard or a document left by an entry deleted with the triggers off).
        const [{ low, high }] = await tx<{ low: number | null; high: number | null }[]>`
          select least((select min(id) from entries), (select min(entry_id) from entry_guards), (select min(entry_id) from search_documents))::float8 as low,
            greatest((select max(id) from entries), (select max(entry_id) from entry_guards), (select max(entry_id) from search_documents))::float8 as high
        `
        first = sliceStart(this.#next === null || low === null || high === null || this.#next > high || this.#next < low ? (low ?? 0) : this.#next)
        this.#next = first + DRIFT_SLICE_ENTRIES
        const last = this.#next - 1
        return tx<{ structure: Structure; drifted: number }[]>`
          select 'triggers' as structure, count(*)::int as drifted from vitrine_trigger_drift()
          union all
          select 'term_lists', count(*)::int from vitrine_term_list_drift()
          union all
          select 'entry_guards', count(*)::int from vitrine_entry_guard_drift(${first}::int8, ${last}::int8)
          union all
          select 'search_documents', count(*)::int from vitrine_search_document_drift(${first}::int8, ${last}::int8)
          union all
          select 'search_postings', count(*)::int from vitrine_search_posting_drift(${first}::int8, ${last}::int8)
          union all
          select 'search_prefixes', count(*)::int from vitrine_search_prefix_drift(${first}::int8, ${last}::int8)
        `
      })
    } catch (error) {
      const code = (error as { code?: string }).code ?? ''
      const unreachable = !/^[0-9A-Z]{5}$/.test(code) || /^(08|53|57P|3D|28)/.test(code)
      this.log[unreachable ? 'debug' : 'warn']('could not compare the kept structures with the base tables: the next check tries again', { error })
      return
    }
    for (const { structure, drifted } of found) {
      const wasDrifting = this.drifted()[structure] > 0
      const slices = this.#drifted.get(structure) ?? new Map<number, number>()
      this.#drifted.set(structure, slices)
      // The triggers and the term lists are checked whole: one slot.
      const slot = structure === 'triggers' || structure === 'term_lists' ? -1 : first
      if (drifted > 0) slices.set(slot, drifted)
      else slices.delete(slot)
      const total = this.drifted()[structure]
      recordKeptDrift(structure, total)
      if (total > 0 && !wasDrifting) {
        this.log.warn('a structure kept beside the data model drifted (written with triggers off?): answers stay right, searches and counts may not; run `bun run repair` as the database owner', { structure, drifted: total, ...(slot === -1 ? {} : { entries: `${first}-${first + DRIFT_SLICE_ENTRIES - 1}` }) })
      } else if (total === 0 && wasDrifting) {
        this.log.info('a kept structure agrees with the base tables again', { structure })
      }
    }
  }
}
