import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { isLive, MAX_ID } from '../content/statement-fragments'
import type { EventMark } from './event-mark'

/** One `change` event's data (C49): the entries of a type that may have changed; null: anything of it. */
export interface TypeChange {
  type: string
  ids: number[] | null
}

/** What one read of the change log found since a mark. */
export interface ChangesRead {
  /** By type slug; empty when nothing changed (or when read without a mark). */
  changes: TypeChange[]
  /** Where the next read starts. */
  mark: EventMark
  /** Every content type's slug, now. */
  types: string[]
  /** The same types' slugs by id (JSON keys: the id as text), as the change notifications name them. */
  typeSlugs: Record<string, string>
  /** Milliseconds from the statement's now() to the next go-live of any type; null when none is ahead. */
  nextGoLiveInMs: number | null
  /** Marks made before this (microseconds since 1970) are expired: the log rows they need may be pruned. */
  prunedBeforeMicros: string | null
}

/**
 * Past this many entries of a type in one read, its event says `ids: null`
 * (anything of the type): a bulk write costs a client one event, never a
 * megabyte of ids.
 */
export const MAX_IDS_PER_EVENT = 1000

/**
 * Past this many rows of the log (or entries a shared row reaches) in one
 * read, the types written are told whole (`ids: null`): a bulk write, or a
 * client's month-old mark, costs a read of this many rows, never of the whole
 * write, and the feed never stalls on it.
 */
export const MAX_ROWS_PER_READ = 10 * MAX_IDS_PER_EVENT

interface ChangesRow {
  changes: TypeChange[]
  position: string
  in_progress: string[]
  at_micros: string
  types: string[]
  type_slugs: Record<string, string>
  next_go_live_ms: number | null
  pruned_before_micros: string | null
}

/**
 * The changes of every type since `since` in one statement (C49), by the
 * rules of a sync delta (sql/change-log.md): an entry's own rows, the
 * entries that show a shared row written, every entry of a type when the log
 * says so, the go-lives since the mark's time; each entry once, reported only
 * when it is live now or was live when a write took it away (C2: an entry
 * that never was live never shows). Without `since`, only the mark and the
 * types. A mark a client sent costs the log since it: `heavy` (C47).
 * @example await readChangesSince(sql, mark, { timeoutMs: 5000, heavy: false })
 */
export async function readChangesSince(sql: Sql, since: EventMark | null, options: { timeoutMs: number; heavy: boolean }): Promise<ChangesRead> {
  const [row] = await runRead(sql, () => changesStatement(sql, since), options.timeoutMs, { heavy: options.heavy })
  return {
    changes: row.changes,
    mark: { position: row.position, inProgress: row.in_progress, atMicros: row.at_micros },
    types: row.types,
    typeSlugs: row.type_slugs,
    nextGoLiveInMs: row.next_go_live_ms,
    prunedBeforeMicros: row.pruned_before_micros,
  }
}

/** The statement of `readChangesSince`, not yet sent (the benchmark explains it). */
export function changesStatement(sql: Sql, since: EventMark | null): PendingQuery<ChangesRow[]> {
  // No mark: nothing is after the highest position, nor after now().
  const position = since?.position ?? MAX_ID
  const inProgress = `{${since?.inProgress.join(',') ?? ''}}`
  const at = since === null ? sql`now()` : sql`'epoch'::timestamptz + ${since.atMicros}::int8 * interval '1 microsecond'`
  return sql<ChangesRow[]>`
    with types as (
      select id, slug
      from content_types
    ),
    logged as (
      ${changeLogSince(sql, position, inProgress, MAX_ROWS_PER_READ + 1)}
    ),
    -- A bulk write (or a month of log): every type it wrote is told whole, at the cost of the cap.
    overflow as (
      select count(*) > ${MAX_ROWS_PER_READ}::int8 as yes
      from logged
    ),
    reach as (
      -- A shared row reaches the entries that show it: per row written, index ranges; past the cap, every type.
      select r.content_type_id, r.id
      from logged l
      cross join lateral (${entriesShowing(sql)}
      ) r
      where l.shared_id is not null
        and not (select yes from overflow)
      limit ${MAX_ROWS_PER_READ + 1}::int8
    ),
    reach_overflow as (
      select count(*) > ${MAX_ROWS_PER_READ}::int8 as yes
      from reach
    ),
    whole_types as (
      -- A custom field or the type itself changed (or, past the cap, anything of the type was written).
      select l.content_type_id as type_id
      from logged l
      where l.content_type_id is not null
        and (l.entry_id is null or (select yes from overflow))
      union
      -- A language changed, a table was truncated, or a shared row past the cap: every type.
      select t.id
      from types t
      where (select yes from reach_overflow)
        or exists (
          select 1
          from logged l
          where l.shared_table is not null
            and (l.shared_id is null or (select yes from overflow))
        )
    ),
    touched as (
      -- was_live: live in its type when the write took it away (C2, as a sync delta's deleted).
      select l.content_type_id as type_id, l.entry_id as id, l.left_from <= l.changed_at as was_live
      from logged l
      where l.entry_id is not null
        and not (select yes from overflow)
      union all
      select r.content_type_id, r.id, null
      from reach r
      where not (select yes from reach_overflow)
      union all
      -- Go-lives: no write, only the clock (C1); past MAX_IDS_PER_EVENT of a type, its ids are null anyway.
      select g.type_id, g.id, null
      from (${goLivesSince(sql, at, MAX_IDS_PER_EVENT + 1)}) g
    ),
    reported as (
      select t.type_id, t.id
      from (
        select type_id, id, bool_or(was_live) as may_be_held
        from touched
        where type_id not in (select type_id from whole_types)
        group by type_id, id
      ) t
      left join lateral (
        -- One index probe per entry (a fence again: a generic plan hashed every live entry).
        select true as live
        from entries e
        where e.id = t.id
          and e.content_type_id = t.type_id
          and ${isLive(sql)}
        offset 0
      ) now on true
      where t.may_be_held
        or now.live
    ),
    changed as (
      select type_id, null::json as ids
      from whole_types
      union all
      select type_id, case when count(*) > ${MAX_IDS_PER_EVENT}::int8 then null else json_agg(id order by id) end
      from reported
      group by type_id
    )
    select
      (
        select coalesce(json_agg(json_build_object('type', t.slug, 'ids', c.ids) order by t.slug), '[]'::json)
        from changed c
        join types t on t.id = c.type_id
      ) as changes,
      ${markColumns(sql)},
      (select coalesce(json_agg(slug order by slug), '[]'::json) from types) as types,
      (select coalesce(json_object_agg(id, slug), '{}'::json) from types) as type_slugs,
      ${nextGoLiveColumn(sql)},
      (
        select case when pruned_before = '-infinity' then null else (extract(epoch from pruned_before) * 1000000)::int8::text end
        from change_log_state
      ) as pruned_before_micros
  `
}

/**
 * The change log's rows after a mark, as columns `content_type_id, entry_id,
 * shared_table, shared_id, left_from, changed_at, position, xid`: each type's rows
 * by change_log_type_position (the log has no index on position alone), each
 * part an index range in a generic plan too (which the driver's prepared
 * statement gets after five runs: without the fences it scanned the whole log
 * and hashed every entry, 112 ms at 100 000 entries against 2 ms), the shared
 * rows, and the rows of the transactions in progress at the mark; each part
 * stopped past `limit` rows (null: none). A row of a transaction in progress
 * may come twice.
 * @example sql`with logged as (${changeLogSince(sql, '42', '{}', null)}) select count(*) from logged`
 */
export function changeLogSince(sql: Sql, position: string, inProgress: string, limit: number | null): PendingQuery<Row[]> {
  const cap = limit === null ? sql`` : sql`limit ${limit}::int8`
  return sql`
      select c.content_type_id, c.entry_id, c.shared_table, c.shared_id, c.left_from, c.changed_at, c.position, c.xid
      from (select id from content_types) t
      cross join lateral (
        select *
        from change_log c
        where c.content_type_id = t.id
          and c.position > ${position}::int8
        order by c.position
        ${cap}
      ) c
      union all
      select *
      from (
        select c.content_type_id, c.entry_id, c.shared_table, c.shared_id, c.left_from, c.changed_at, c.position, c.xid
        from change_log c
        where c.content_type_id is null
          and c.position > ${position}::int8
        order by c.position
        ${cap}
      ) shared_rows
      union all
      select *
      from (
        select c.content_type_id, c.entry_id, c.shared_table, c.shared_id, c.left_from, c.changed_at, c.position, c.xid
        from change_log c
        where c.xid = any (${inProgress}::xid8[])
        ${cap}
      ) in_flight`
}

/**
 * A mark of the change log as three columns, `position` (the highest position
 * written, by each type's index), `in_progress` (the transactions the
 * statement's snapshot cannot see yet, as JSON) and `at_micros` (now()).
 * @example sql`select ${markColumns(sql)}`
 */
export function markColumns(sql: Sql): PendingQuery<Row[]> {
  return sql`
      greatest(
        (
          select max(m.position)
          from content_types t
          cross join lateral (
            select max(c.position) as position
            from change_log c
            where c.content_type_id = t.id
          ) m
        ),
        (
          select max(c.position)
          from change_log c
          where c.content_type_id is null
        ),
        0
      )::text as position,
      (select coalesce(json_agg(x::text), '[]'::json) from pg_snapshot_xip(pg_current_snapshot()) x) as in_progress,
      (extract(epoch from now()) * 1000000)::int8::text as at_micros`
}

/**
 * `next_go_live_ms`: milliseconds from now() to the next go-live of any type;
 * null when none is ahead.
 * @example sql`select ${nextGoLiveColumn(sql)}`
 */
export function nextGoLiveColumn(sql: Sql): PendingQuery<Row[]> {
  return sql`
      (
        select ceil(extract(epoch from min(n.at) - now()) * 1000)::int8
        from content_types t
        cross join lateral (
          select min(e.published_at) as at
          from entries e
          where e.content_type_id = t.id
            and e.status = 'published'
            and e.published_at > now()
            -- 'infinity' never comes (and PostgreSQL 15 cannot subtract it).
            and e.published_at < 'infinity'
        ) n
      ) as next_go_live_ms`
}

/**
 * The entries (`content_type_id, id`) that show the shared row of the change
 * log row `l` (an author, an image, a term, a taxonomy's terms): index ranges,
 * for a lateral join.
 * @example sql`select r.id from logged l cross join lateral (${entriesShowing(sql)}) r`
 */
export function entriesShowing(sql: Sql): PendingQuery<Row[]> {
  return sql`
        select e.content_type_id, e.id
        from entries e
        where l.shared_table = 'authors'
          and e.author_id = l.shared_id
        union all
        select e.content_type_id, e.id
        from entries e
        where l.shared_table = 'media'
          and e.featured_image_id = l.shared_id
        union all
        select e.content_type_id, e.id
        from entry_terms et
        cross join lateral (select e.content_type_id, e.id from entries e where e.id = et.entry_id offset 0) e
        where l.shared_table = 'terms'
          and et.term_id = l.shared_id
        union all
        select e.content_type_id, e.id
        from terms term
        join entry_terms et on et.term_id = term.id
        cross join lateral (select e.content_type_id, e.id from entries e where e.id = et.entry_id offset 0) e
        where l.shared_table = 'taxonomies'
          and term.taxonomy_id = l.shared_id`
}

/**
 * The entries (`type_id, id`) whose publication time came after `at` and by
 * now (go-lives: no write, only C1's clock), by each type's
 * entries_published_list range, at most `limit` a type (null: all).
 * @example sql`select id from (${goLivesSince(sql, sql`now() - interval '1 minute'`, null)}) g`
 */
export function goLivesSince(sql: Sql, at: PendingQuery<Row[]>, limit: number | null): PendingQuery<Row[]> {
  return sql`
      select t.id as type_id, g.id
      from content_types t
      cross join lateral (
        select e.id
        from entries e
        where e.content_type_id = t.id
          and e.status = 'published'
          and e.published_at > ${at}
          and e.published_at <= now()
        ${limit === null ? sql`` : sql`limit ${limit}::int8`}
      ) g`
}
