import type { NextGoLives } from '../cache/next-go-lives'
import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import type { ListPosition } from './cursor'
import type { ListFilters } from './parameters'
import { isDatedLive, isUndatedLive, listOrder, MAX_ID, type RowContents } from './statement-fragments'

export interface ListOptions extends RowContents {
  /** Give up (503) and cancel the statement after this long (C22); a lost connection is retried once within it. */
  timeoutMs?: number
  type: string
  lang: string | undefined
  limit: number
  /** Where the page starts: after this many live entries, or right after this entry's place in list order (C39). */
  start: { offset: number } | { after: ListPosition }
  /** Count the type's live entries one by one instead of reading the kept counts (they drifted: see sql/live-entry-counts.md). */
  countByScan?: boolean
  /** C40–C43: only the live entries that pass these. */
  filters?: ListFilters
  /** C36: the types' next go-lives the change listener keeps; without it, every statement reads its type's. */
  goLives?: NextGoLives
  /** False: the statement leaves out its type's next go-live, which the process knows (set by listLiveEntries). */
  readGoLive?: boolean
}

/**
 * A publication time from whole seconds and microseconds, exact: a float8 holds
 * whole seconds exactly and to_timestamp multiplies them by 10^6 without loss
 * up to about the year 20 000 (the product stays below 2^53 × 64), far past any
 * time a live entry can have (C1: not after now()).
 */
export function positionTime(sql: Sql, time: { seconds: number; microseconds: number }): PendingQuery<Row[]> {
  return sql`(to_timestamp(${time.seconds}::float8) + ${time.microseconds}::int8 * interval '1 microsecond')`
}

/**
 * A page by offset: from the dated range while the offset falls in it, then
 * from the undated range. An offset past the dated range skips it without
 * reading it (LIMIT 0).
 */
export function pageByOffset(sql: Sql, rows: number, offset: number, filter: PendingQuery<Row[]> = sql``): PendingQuery<Row[]> {
  return sql`
    dated_page as (
      select e.*
      from entries e
      where ${isDatedLive(sql)} ${filter}
      order by ${listOrder(sql)}
      limit case when ${offset}::int8 < (select dated from live_counts) then ${rows}::int8 else 0 end
      offset ${offset}::int8
    ),
    ${undatedRest(sql, rows, sql`greatest(${offset}::int8 - (select dated from live_counts), 0)`, filter)}
  `
}

/** The undated range, after `skip` of its entries, for what dated_page left of the page. */
function undatedRest(sql: Sql, rows: number, skip: PendingQuery<Row[]>, filter: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`
    undated_page as (
      select e.*
      from entries e
      where ${isUndatedLive(sql)} ${filter}
      order by ${listOrder(sql)}
      -- No live undated entry (of the filter): the range is not read at all.
      limit case when (select undated from live_counts) > 0 then ${rows}::int8 - (select count(*) from dated_page) else 0 end
      offset ${skip}
    )
  `
}

/**
 * C39: a page that continues right after a place in list order, at the same
 * cost at any depth. A place in the future (a cursor made up, or one whose
 * time the clock has not reached) starts at now(): the index range never
 * walks embargoed entries, whose number and times would show in its cost (C2).
 */
export function pageAfter(sql: Sql, rows: number, after: ListPosition, filter: PendingQuery<Row[]> = sql``): PendingQuery<Row[]> {
  if (after.publishedAt === null) {
    return sql`
      dated_page as (
        select e.*
        from entries e
        where false
      ),
      undated_page as (
        select e.*
        from entries e
        where ${isUndatedLive(sql)} ${filter}
          and e.id < ${after.id}
        order by ${listOrder(sql)}
        limit ${rows}::int8
      )
    `
  }
  return sql`
    dated_page as (
      select e.*
      from entries e
      where ${isDatedLive(sql)} ${filter}
        and (e.published_at, e.id) < (
          least(${positionTime(sql, after.publishedAt)}, now()),
          case when ${positionTime(sql, after.publishedAt)} > now() then ${MAX_ID}::int8 else ${after.id}::int8 end
        )
      order by ${listOrder(sql)}
      limit ${rows}::int8
    ),
    ${undatedRest(sql, rows, sql`0`, filter)}
  `
}
