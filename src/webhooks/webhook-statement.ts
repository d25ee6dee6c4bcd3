import type { PendingQuery, TransactionSql } from 'postgres'
import type { Sql } from '../db/connect'
import { changeLogSince, entriesShowing, goLivesSince, markColumns, nextGoLiveColumn } from '../changes/event-statement'
import type { EventMark } from '../changes/event-mark'

/** What became of one entry since a mark (C57). */
export type EntryChangeKind = 'published' | 'updated' | 'unpublished'

export interface EntryChange {
  id: number
  /** Its type's slug: where it is live now, or, unpublished, where it was. */
  type: string
  kind: EntryChangeKind
  /** When it happened, in milliseconds since 1970: its write's, its go-live's, or the read's. */
  atMs: number
  /** Live: each language it has a translation in, with the slug a single-entry request finds it by (C19). */
  slugs: [language: string, slug: string][]
}

export interface EntryChangesRead {
  /** In change-log order: by the first row of each entry after the mark, then go-lives by time, then by id. */
  changes: EntryChange[]
  /** Where the next read starts. */
  mark: EventMark
  nextGoLiveInMs: number | null
  /** Marks made before this (microseconds since 1970) may miss rows: the log was pruned. */
  prunedBeforeMicros: string | null
}

interface Row {
  changes: EntryChange[] | null
  position: string
  in_progress: string[]
  at_micros: string
  next_go_live_ms: number | null
  pruned_before_micros: string | null
}

/**
 * Every entry whose item may have changed since `since`, each once and
 * classified (C57): `published` when it is live now and was not at the mark,
 * `updated` when it was and is, `unpublished` when it was and is not (an
 * entry live at neither end is not told, C2). Whether it was live at the mark
 * comes from its first row in the change log after the mark (the entry's
 * publication time before that write, 0015), or, with no row of its own (an
 * author renamed, a custom field, a go-live), from its row now, which no write
 * changed since. Unlike the event feed's read (C49) nothing is capped: each
 * change is a message. Run in the delivering instance's transaction.
 * @example await readEntryChanges(sql, mark)
 */
export async function readEntryChanges(tx: TransactionSql, since: EventMark): Promise<EntryChangesRead> {
  // The fragments are built by the same tagged template, bound to the transaction's connection.
  const [row] = await entryChangesStatement(tx as unknown as Sql, since)
  return {
    changes: row!.changes ?? [],
    mark: { position: row!.position, inProgress: row!.in_progress, atMicros: row!.at_micros },
    nextGoLiveInMs: row!.next_go_live_ms,
    prunedBeforeMicros: row!.pruned_before_micros,
  }
}

/**
 * The change log's mark now, with nothing read: where a first delivering instance starts, and where the reader
 * moves on when no endpoint would be told anything.
 * @example const { mark } = await readMarkNow(sql)
 */
export async function readMarkNow(tx: TransactionSql): Promise<Omit<EntryChangesRead, 'changes' | 'prunedBeforeMicros'>> {
  const sql = tx as unknown as Sql
  const [row] = await sql<Row[]>`select ${markColumns(sql)}, ${nextGoLiveColumn(sql)}`
  return { mark: { position: row!.position, inProgress: row!.in_progress, atMicros: row!.at_micros }, nextGoLiveInMs: row!.next_go_live_ms }
}

function entryChangesStatement(sql: Sql, since: EventMark): PendingQuery<Row[]> {
  const inProgress = `{${since.inProgress.join(',')}}`
  const at = sql`('epoch'::timestamptz + ${since.atMicros}::int8 * interval '1 microsecond')`
  return sql<Row[]>`
    with logged as (
      ${changeLogSince(sql, since.position, inProgress, null)}
    ),
    firsts as (
      -- The entry's state at the mark, from its first row after it (writers of one entry take turns on its guard,
      -- C56, so positions follow their commits): left_from is its publication time before that write, null when
      -- it was not published then. One statement that moves a published entry to another type writes two rows,
      -- in either order: the old type's with left_from, the new type's without. Then the old one says it.
      select f.id,
        case when f.moved then f.next_type else f.content_type_id end as content_type_id,
        case when f.moved then f.next_left_from else f.left_from end as left_from,
        f.position, f.changed_at
      from (
        select distinct on (l.entry_id) l.entry_id as id, l.content_type_id, l.left_from, l.position,
          coalesce(l.left_from is null and lead(l.xid) over w = l.xid and lead(l.content_type_id) over w <> l.content_type_id
            and lead(l.left_from) over w is not null, false) as moved,
          lead(l.content_type_id) over w as next_type,
          lead(l.left_from) over w as next_left_from,
          max(l.changed_at) over (partition by l.entry_id) as changed_at
        -- A row of a transaction in progress at the mark may have been read twice.
        from (select distinct * from logged) l
        where l.entry_id is not null
        window w as (partition by l.entry_id order by l.position)
        order by l.entry_id, l.position
      ) f
    ),
    whole_types as (
      select l.content_type_id as type_id
      from logged l
      where l.content_type_id is not null
        and l.entry_id is null
      union
      select t.id
      from content_types t
      where exists (select 1 from logged l where l.shared_table is not null and l.shared_id is null)
    ),
    candidates as (
      select f.id
      from firsts f
      union
      select r.id
      from logged l
      cross join lateral (${entriesShowing(sql)}) r
      where l.shared_id is not null
      union
      select e.id
      from whole_types w
      join entries e on e.content_type_id = w.type_id
      where e.status = 'published'
      union
      -- Go-lives with no write (C1's clock).
      select g.id
      from (${goLivesSince(sql, at, null)}) g
    ),
    classified as (
      select c.id, f.position,
        coalesce(e.status = 'published' and (e.published_at is null or e.published_at <= now()), false) as live_now,
        case
          when f.id is not null then coalesce(f.left_from <= ${at}, false)
          else coalesce(e.status = 'published' and (e.published_at is null or e.published_at <= ${at}), false)
        end as was_live,
        e.content_type_id as type_now, f.content_type_id as type_then,
        case
          when f.id is not null then f.changed_at
          when e.published_at > ${at} then e.published_at
          else now()
        end as at
      from candidates c
      left join firsts f on f.id = c.id
      -- One index probe per entry (a fence: with estimates of thousands of candidates the planner hashed every entry,
      -- 1.6 ms of a 1.9 ms read for one change at 11 000 entries).
      left join lateral (select e.status, e.published_at, e.content_type_id from entries e where e.id = c.id offset 0) e on true
    ),
    told as (
      -- An entry live before and after in two types (moved) is unpublished from the one and published in the other:
      -- an endpoint of either type hears its side.
      select k.id, k.position, k.at, 0 as part,
        case when k.live_now and k.was_live then 'updated' when k.live_now then 'published' else 'unpublished' end as kind,
        case when k.live_now then k.type_now else coalesce(k.type_then, k.type_now) end as type_id,
        k.live_now
      from classified k
      where (k.live_now or k.was_live)
        and not (k.live_now and k.was_live and k.type_then is distinct from k.type_now and k.type_then is not null)
      union all
      select k.id, k.position, k.at, s.part, s.kind, s.type_id, s.kind = 'published'
      from classified k
      cross join lateral (values (0, 'unpublished', k.type_then), (1, 'published', k.type_now)) s(part, kind, type_id)
      where k.live_now and k.was_live and k.type_then is distinct from k.type_now and k.type_then is not null
    )
    select
      (
        select json_agg(json_build_object(
          'id', k.id,
          'type', t.slug,
          'kind', k.kind,
          'atMs', floor(extract(epoch from k.at) * 1000),
          'slugs', coalesce(s.slugs, '[]'::json)
        ) order by k.position nulls last, k.at, k.id, k.part)
        from told k
        join content_types t on t.id = k.type_id
        left join lateral (
          -- C19: a translation without a slug is found by the default language's.
          select json_agg(json_build_array(tr.language_code, coalesce(tr.slug, d.slug)) order by tr.language_code) as slugs
          from entry_translations tr
          left join entry_translations d on d.entry_id = tr.entry_id and d.language_code = (select l.code from languages l where l.is_default limit 1)
          where tr.entry_id = k.id
            and coalesce(tr.slug, d.slug) is not null
            and k.live_now
        ) s on true
      ) as changes,
      ${markColumns(sql)},
      ${nextGoLiveColumn(sql)},
      (
        select case when pruned_before = '-infinity' then null else (extract(epoch from pruned_before) * 1000000)::int8::text end
        from change_log_state
      ) as pruned_before_micros
  `
}
