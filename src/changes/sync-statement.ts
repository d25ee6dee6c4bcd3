import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { commonTables, completeRow, entryRows, headerOf, isLive, languagesOf, resultHeader, type EntryRow, type Languages, type ResultRow, type RowContents } from '../content/statement-fragments'
import type { LogMark } from './sync-token'

export interface SyncPageOptions {
  type: string
  lang: string | undefined
  /** null: the first sync, every live entry of the type; otherwise the changes since this mark. */
  since: LogMark | null
  /** Only entries whose id is above this one (the pages already read). */
  afterId: number
  limit: number
  /** Load each entry's model with these parts (C25, C54); null: no model. */
  model: RowContents['model']
  timeoutMs: number
}

export interface SyncPage {
  typeExists: boolean
  typeId: number | null
  goLiveInSeconds: number | null
  languages: Languages
  /** The live entries of the page, by id. */
  rows: EntryRow[]
  /** The ids of the page's entries that stopped being live in the type, by id. */
  deleted: number[]
  /** The page's highest id, live or deleted; null when the page is empty. */
  lastId: number | null
  hasMore: boolean
  /** What this statement saw of the change log: where the next sync starts. */
  mark: LogMark
  /** Tokens made before this are expired: the log rows they need may be pruned (change_log_state). */
  prunedBefore: string
}

interface SyncResultRow extends ResultRow {
  deleted: number[]
  last_id: number | null
  type_position: string
  shared_position: string
  in_progress: string[]
  marked_at: string
  pruned_before: string
}

/**
 * C47: a delta costs the changes since its token (and a token is only JSON:
 * anyone can ask for a month of the log), and a page of more entries than a
 * list's most (100) costs its size: both run in the pool's heavy lane. A first
 * sync's pages of up to 100 walk the type by id, as cheap as a list page.
 * @example isHeavySync({ since: null, limit: 100 }) // false
 */
export function isHeavySync(options: Pick<SyncPageOptions, 'since' | 'limit'>): boolean {
  return options.since !== null || options.limit > 100
}

/**
 * One page of a sync in one statement (C48): the type, the language, the
 * change log's mark in the statement's own snapshot, and up to `limit`
 * entries by id, each either live (an item, as in lists) or gone from the
 * type (an id in `deleted`).
 * @example await readSyncPage(sql, { type: 'post', lang: undefined, since: null, afterId: 0, limit: 100, model: null, timeoutMs: 5000 })
 */
export async function readSyncPage(sql: Sql, options: SyncPageOptions): Promise<SyncPage> {
  const [result] = await runRead(sql, () => syncStatement(sql, options), options.timeoutMs, { heavy: isHeavySync(options) })
  const languages = languagesOf(result)
  return {
    ...headerOf(result),
    languages,
    rows: result.rows.map((row) => completeRow(row, languages, result.content_type)),
    deleted: result.deleted,
    lastId: result.last_id,
    hasMore: result.has_more === true,
    mark: { typePosition: result.type_position, sharedPosition: result.shared_position, inProgress: result.in_progress, at: result.marked_at },
    prunedBefore: result.pruned_before,
  }
}

/** The statement of `readSyncPage`, not yet sent (the benchmark explains it). */
export function syncStatement(sql: Sql, options: SyncPageOptions): PendingQuery<SyncResultRow[]> {
  const { type, lang, since, afterId, limit, model } = options
  return sql<SyncResultRow[]>`
    with ${commonTables(sql, type, lang)},
    ${since === null ? everyLiveEntry(sql, afterId, limit) : changedEntries(sql, since, afterId, limit)},
    page as (
      select *
      from page_candidates
      order by id
      limit ${limit}::int8
    ),
    page_entries as (
      select e.*
      from entries e
      where e.id in (select id from page where live)
    )
    select
      ${resultHeader(sql, true, (model ?? null) !== null)},
      (select count(*) from page_candidates) > ${limit}::int8 as has_more,
      (select max(id) from page) as last_id,
      (select coalesce(json_agg(id order by id), '[]'::json) from page where not live) as deleted,
      (
        select coalesce(max(c.position), 0)::text
        from change_log c
        where c.content_type_id = (select id from content_type)
      ) as type_position,
      (
        select coalesce(max(c.position), 0)::text
        from change_log c
        where c.content_type_id is null
      ) as shared_position,
      (select coalesce(json_agg(x::text), '[]'::json) from pg_snapshot_xip(pg_current_snapshot()) x) as in_progress,
      to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as marked_at,
      (
        select case when pruned_before = '-infinity' then '' else to_char(pruned_before at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') end
        from change_log_state
      ) as pruned_before,
      ${entryRows(sql, { model }, sql`e.id`)} as rows
  `
}

/** C1 in the requested type; `e` is in scope and may be a missing row (null: not live). */
function liveInType(sql: Sql): PendingQuery<Row[]> {
  return sql`coalesce(e.content_type_id = (select id from content_type) and ${isLive(sql)}, false)`
}

/** The first sync: the type's live entries by id (index entries_sync_walk). */
function everyLiveEntry(sql: Sql, afterId: number, limit: number): PendingQuery<Row[]> {
  return sql`
    page_candidates as (
      select e.id, true as live
      from entries e
      where e.content_type_id = (select id from content_type)
        and e.status = 'published'
        and e.id > ${afterId}::int8
        and (e.published_at is null or e.published_at <= now())
      order by e.id
      limit ${limit + 1}::int8
    )
  `
}

/**
 * A delta: the entries the log names since `since` (sql/change-log.md), those
 * that show a shared row written since, every entry of the type when the log
 * says so, and those that went live since `since.at`; each once, live in the
 * type (an item) or once published and no longer live in it (deleted).
 */
function changedEntries(sql: Sql, since: LogMark, afterId: number, limit: number): PendingQuery<Row[]> {
  const inProgress = `{${since.inProgress.join(',')}}`
  return sql`
    logged as (
      select c.entry_id, c.left_from, c.changed_at, c.shared_table, c.shared_id, c.content_type_id
      from change_log c
      where c.content_type_id = (select id from content_type)
        and c.position > ${since.typePosition}::int8
      union all
      select c.entry_id, c.left_from, c.changed_at, c.shared_table, c.shared_id, c.content_type_id
      from change_log c
      where c.content_type_id is null
        and c.position > ${since.sharedPosition}::int8
      union all
      select c.entry_id, c.left_from, c.changed_at, c.shared_table, c.shared_id, c.content_type_id
      from (
        select *
        from change_log c
        where c.xid = any (${inProgress}::xid8[])
        -- A fence: ANDed with the type's index range, the generic plan read the type's whole log.
        offset 0
      ) c
      where c.content_type_id = (select id from content_type)
        or c.content_type_id is null
    ),
    whole_type as (
      select exists (
        select 1
        from logged l
        where (l.content_type_id is not null and l.entry_id is null)
          or (l.shared_table is not null and l.shared_id is null)
      ) as changed
    ),
    touched as (
      -- was_live: live in the type when the write took it away (its time had come then): a
      -- client may hold it. Read at the write's time, not now: an entry postponed or withdrawn
      -- before its time never was live, and its id is never shown (C2).
      select l.entry_id as id, l.left_from <= l.changed_at as was_live
      from logged l
      where l.entry_id is not null
      union all
      select e.id, null
      from logged l
      join entries e on e.author_id = l.shared_id
      where l.shared_table = 'authors'
        and e.content_type_id = (select id from content_type)
      union all
      select e.id, null
      from logged l
      join entries e on e.featured_image_id = l.shared_id
      where l.shared_table = 'media'
        and e.content_type_id = (select id from content_type)
      union all
      select et.entry_id, null
      from logged l
      join entry_terms et on et.term_id = l.shared_id
      where l.shared_table = 'terms'
      union all
      select et.entry_id, null
      from logged l
      join terms term on term.taxonomy_id = l.shared_id
      join entry_terms et on et.term_id = term.id
      where l.shared_table = 'taxonomies'
      union all
      select e.id, null
      from entries e
      where (select changed from whole_type)
        and e.content_type_id = (select id from content_type)
        and e.status = 'published'
      union all
      -- Go-lives: no write, only the clock (C1).
      select e.id, null
      from entries e
      where e.content_type_id = (select id from content_type)
        and e.status = 'published'
        and e.published_at > ${since.at}::timestamptz
        and e.published_at <= now()
    ),
    page_candidates as (
      select t.id, ${liveInType(sql)} as live
      from (
        select id, bool_or(was_live) as may_be_held
        from touched
        where id > ${afterId}::int8
        group by id
      ) t
      left join entries e on e.id = t.id
      -- Gone from the type: reported only if it may have been live, never an entry that never was (C2).
      where ${liveInType(sql)} or t.may_be_held
      order by t.id
      limit ${limit + 1}::int8
    )
  `
}
