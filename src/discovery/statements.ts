import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { ANY_TYPE } from '../cache/answer-store'
import { runRead } from '../db/read'
import { isLive } from '../content/statement-fragments'

/** One row of `GET /api/v1/languages` (C46). */
export interface LanguageRow {
  code: string
  name: string
  is_default: boolean
}

/** One row of `GET /api/v1/content-types`: `total` as C18. */
export interface ContentTypeRow {
  slug: string
  name: string
  total: number
}

/** One row of `GET /api/v1/taxonomies`. */
export interface TaxonomyRow {
  slug: string
  name: string
}

/** One term of a term list: `total` equals `meta.total` of the list filtered by `taxonomy:slug` (C46). */
export interface TermRow {
  id: number
  name: string
  slug: string
  total: number
}

export interface ContentTypeList {
  types: ContentTypeRow[]
  /** Seconds until the next go-live of any type (C1), null when none is ahead. */
  goLiveInSeconds: number | null
}

export interface TermPage {
  taxonomyExists: boolean
  /** False when `type` names no content type (C5); true without `type`. */
  typeExists: boolean
  /** The content type's id when `type` is given and exists. */
  typeId: number | null
  /** The slugs of the types the totals count: `type`, or every type. */
  typeSlugs: string[]
  goLiveInSeconds: number | null
  /** The taxonomy's terms that a live entry (of the types counted) carries. */
  total: number
  terms: TermRow[]
}

export interface TermListOptions {
  taxonomy: string
  /** Only the live entries of this content type; null: of every type. */
  type: string | null
  /** Types whose kept counts drifted: their entries are counted one by one (sql/live-entry-counts.md). */
  countByScan: readonly string[]
  limit: number
  offset: number
  timeoutMs: number
  /** C47: the statement runs in the heavy lane (a deep page, or a type counted one by one). */
  heavy: boolean
}

/** C50: languages and taxonomies change only with everything (0002), as their cached answers. */
const dependsOnNoType = () => null

/**
 * C46: every configured language, ordered by code (byte order: the same on every database).
 * @example await listLanguages(sql, 5000) // [{ code: 'de', name: 'Deutsch', is_default: false }, …]
 */
export async function listLanguages(sql: Sql, timeoutMs: number): Promise<LanguageRow[]> {
  return [
    ...(await runRead(sql, (db) => db<LanguageRow[]>`
      select code, name, is_default
      from languages
      order by code collate "C"
    `, timeoutMs, { answerType: dependsOnNoType })),
  ]
}

/**
 * C46: every taxonomy, ordered by slug.
 * @example await listTaxonomies(sql, 5000) // [{ slug: 'category', name: 'Category' }, …]
 */
export async function listTaxonomies(sql: Sql, timeoutMs: number): Promise<TaxonomyRow[]> {
  return [
    ...(await runRead(sql, (db) => db<TaxonomyRow[]>`
      select slug, name
      from taxonomies
      order by slug collate "C"
    `, timeoutMs, { answerType: dependsOnNoType })),
  ]
}

/**
 * C46: every content type, ordered by slug, with its live entries (C18) from
 * the kept counts, as the list statement reads them; a type whose counts
 * drifted is counted one by one. One statement, which also says when the
 * next embargoed entry of any type goes live (the totals change then).
 * @example await listContentTypes(sql, { countByScan: [], timeoutMs: 5000 })
 */
export async function listContentTypes(sql: Sql, options: { countByScan: readonly string[]; timeoutMs: number }): Promise<ContentTypeList> {
  const [row] = await runRead(sql, (db) => contentTypesStatement(db, options.countByScan), options.timeoutMs, { heavy: options.countByScan.length > 0, answerType: () => ANY_TYPE })
  return { types: row.types, goLiveInSeconds: row.go_live_in }
}

function contentTypesStatement(sql: Sql, countByScan: readonly string[]): PendingQuery<{ types: ContentTypeRow[]; go_live_in: number | null }[]> {
  const kept = sql`
    (
      select coalesce(sum(d.delta), 0)::int8
      from live_entry_count_deltas d
      where d.content_type_id = ct.id
        and d.live_from <= now()
    ) + (
      select coalesce(sum(d.delta), 0)::int8
      from live_entry_count_deltas d
      where d.content_type_id = ct.id
        and d.live_from is null
    )
  `
  const total = countByScan.length === 0
    ? kept
    : sql`
      case when ct.slug in (select jsonb_array_elements_text(${JSON.stringify(countByScan)}::text::jsonb))
        then (select count(*) from entries e where e.content_type_id = ct.id and ${isLive(sql)})
        else ${kept}
      end
    `
  return sql`
    with counted_types as (
      select id, slug, name
      from content_types
    )
    select
      (
        select coalesce(json_agg(json_build_object('slug', ct.slug, 'name', ct.name, 'total', ${total}) order by ct.slug collate "C"), '[]'::json)
        from counted_types ct
      ) as types,
      ${nextGoLive(sql)} as go_live_in
  `
}

/**
 * C46: one page of a taxonomy's terms that live entries carry (of `type`, or
 * of any type), ordered by name then id, each with its live total, in one
 * statement.
 *
 * Which terms are carried, and how many: term_list_carried (migration 0007)
 * holds, per term and type (and for any type), its name and from when live
 * entries carry it, as the kept filter counts (0004, kind 'term') say; the
 * page reads its index (term_list_carried_order) in name order from the start
 * of the taxonomy's range, keeps the rows carried now and stops when it is
 * full; meta.total counts the same range. A term whose counts moved since its
 * row was written is in term_list_dirty and is judged from the kept filter
 * counts instead. Each page term's total is its kept rows live now (dated up
 * to now(), and undated), as the filtered list reads them: embargoed entries'
 * rows are never read, and each goes live at its second with no write. The
 * cost is the page's, not the taxonomy's (sql/live-entry-counts.md, "Term lists").
 *
 * A term whose slug another term of its taxonomy shares: a list filtered by
 * `taxonomy:slug` holds the entries that carry any of them (C40), so that
 * term's total counts those entries, one by one (as that list does), so that
 * it still equals the list's `meta.total`.
 * @example await listTerms(sql, { taxonomy: 'tag', type: 'post', countByScan: [], limit: 20, offset: 0, timeoutMs: 5000, heavy: false })
 */
export async function listTerms(sql: Sql, options: TermListOptions): Promise<TermPage> {
  const [row] = await runRead(sql, (db) => termListStatement(db, options), options.timeoutMs, {
    heavy: options.heavy,
    answerType: (rows) => (options.type === null ? ANY_TYPE : (rows[0]?.type_id ?? null)),
  })
  return {
    taxonomyExists: row.taxonomy_exists,
    typeExists: row.type_exists,
    typeId: row.type_id,
    typeSlugs: row.type_slugs,
    goLiveInSeconds: row.go_live_in,
    total: row.total,
    terms: row.terms,
  }
}

interface TermListRow extends Row {
  taxonomy_exists: boolean
  type_exists: boolean
  type_id: number | null
  type_slugs: string[]
  go_live_in: number | null
  total: number
  terms: TermRow[]
}

/**
 * The statement of `listTerms`, not yet sent (the tests explain it): a read
 * of term_list_carried in name order, or, while a type counted is drifted,
 * `summedTermListStatement`.
 */
export function termListStatement(sql: Sql, options: TermListOptions): PendingQuery<TermListRow[]> {
  if (options.countByScan.length > 0) return summedTermListStatement(sql, options)
  const { taxonomy, type, limit, offset } = options
  // The rows of term_list_carried carried now and not dirty; content type 0: a list without `type` (migration 0007).
  const kept = sql`
    c.taxonomy_id = (select id from taxonomy)
    and c.content_type_id = ${type === null ? sql`0::int8` : sql`(select id from counted_types)`}
    and c.carried_from <= now()
    and c.term_id not in (select term_id from dirty)
  `
  return sql<TermListRow[]>`
    with ${termListScope(sql, taxonomy, type)},
    dirty as materialized (
      select distinct q.term_id
      from term_list_dirty q
    ),
    dirty_carried as materialized (
      -- Terms whose counts moved since term_list_carried was written: summed here, as the filtered list sums them.
      select t.id, t.name
      from dirty d
      join terms t on t.id = d.term_id
      where t.taxonomy_id = (select id from taxonomy)
        and ${liveTotal(sql, sql`t.id`)} > 0
    ),
    page_start as (
      -- The first offset + limit carried terms: from the start of the taxonomy's range of
      -- term_list_carried_order, in its order (the equal columns first, so that the index gives it),
      -- stopping there; and the dirty terms carried.
      (
        select c.term_id as id, c.name
        from term_list_carried c
        where ${kept}
        order by c.taxonomy_id, c.content_type_id, c.name, c.term_id
        limit ${offset + limit}::int8
      )
      union all
      select d.id, d.name
      from dirty_carried d
    ),
    page as (
      -- The slugs of the page's terms only, after the offset.
      select p.id, p.name, (select t.slug from terms t where t.id = p.id) as slug
      from (
        select *
        from page_start p
        order by p.name, p.id
        limit ${limit}::int8
        offset ${offset}::int8
      ) p
    )
    select
      ${termListHeader(sql, type)},
      (
        select count(*)
        from term_list_carried c
        where ${kept}
      ) + (select count(*) from dirty_carried) as total,
      (
        select coalesce(json_agg(json_build_object('id', p.id, 'name', p.name, 'slug', p.slug, 'total', ${termTotal(sql, liveTotal(sql, sql`p.id`))}) order by p.name, p.id), '[]'::json)
        from page p
      ) as terms
  `
}

/** The two statements' first common table expressions: the taxonomy, and the types counted (`type`, or every type). */
function termListScope(sql: Sql, taxonomy: string, type: string | null): PendingQuery<Row[]> {
  return sql`
    taxonomy as (
      select id
      from taxonomies
      where slug = ${taxonomy}
    ),
    counted_types as (
      select id, slug
      from content_types
      where ${type === null ? sql`true` : sql`slug = ${type}`}
    )
  `
}

/** The two statements' first columns: what exists, the types counted, and their next go-live. */
function termListHeader(sql: Sql, type: string | null): PendingQuery<Row[]> {
  return sql`
    exists (select 1 from taxonomy) as taxonomy_exists,
    ${type === null ? sql`true` : sql`exists (select 1 from counted_types)`} as type_exists,
    ${type === null ? sql`null::int8` : sql`(select id from counted_types)`} as type_id,
    (select coalesce(json_agg(ct.slug order by ct.slug collate "C"), '[]'::json) from counted_types ct) as type_slugs,
    ${nextGoLive(sql)} as go_live_in
  `
}

/**
 * The live entries of the types counted that carry the term `termId` (an
 * expression in scope), from its kept filter counts: the rows live now, dated
 * and undated, as the filtered list's `keptCount` sums them (C40, C46).
 */
function liveTotal(sql: Sql, termId: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`
    (
      (
        select coalesce(sum(d.delta), 0)
        from live_filter_count_deltas d
        where d.kind = 'term'
          and d.key = ${termId}
          and d.content_type_id in (select id from counted_types)
          and d.live_from <= now()
      ) + (
        select coalesce(sum(d.delta), 0)
        from live_filter_count_deltas d
        where d.kind = 'term'
          and d.key = ${termId}
          and d.content_type_id in (select id from counted_types)
          and d.live_from is null
      )
    )::int8
  `
}

/**
 * The term list while a type counted is drifted (`countByScan`): every term's
 * kept rows live now summed in one pass over live_filter_count_deltas_live,
 * the drifted types' entries counted one by one (term_list_carried follows the
 * same drifted counts), then the taxonomy's carried terms sorted for the page.
 * Without drifted types it is the statement before migration 0007, which
 * bench/explain-terms.ts measures against the read of term_list_carried.
 */
export function summedTermListStatement(sql: Sql, { taxonomy, type, countByScan, limit, offset }: TermListOptions): PendingQuery<TermListRow[]> {
  const scanned = JSON.stringify(countByScan)
  const keptTypes = sql`
    select id
    from counted_types
    where slug not in (select jsonb_array_elements_text(${scanned}::text::jsonb))
  `
  return sql<TermListRow[]>`
    with ${termListScope(sql, taxonomy, type)},
    live_totals as (
      select l.term_id, sum(l.live)::int8 as total
      from (
        -- float8: a sum of whole numbers exact to 2^53, without numeric's cost per row.
        select d.key as term_id, d.delta::float8 as live
        from live_filter_count_deltas d
        where d.kind = 'term'
          and d.content_type_id in (${keptTypes})
          and d.live_from <= now()
        union all
        select d.key, d.delta::float8
        from live_filter_count_deltas d
        where d.kind = 'term'
          and d.content_type_id in (${keptTypes})
          and d.live_from is null
        ${countByScan.length === 0 ? sql`` : sql`
        union all
        select et.term_id, 1::float8
        from entries e
        join entry_terms et on et.entry_id = e.id
        where e.content_type_id in (select id from counted_types where slug in (select jsonb_array_elements_text(${scanned}::text::jsonb)))
          and ${isLive(sql)}
        `}
      ) l
      group by l.term_id
      having sum(l.live) > 0
    ),
    carried as materialized (
      -- The index alone: id and name are in terms_taxonomy_name; the page's slugs are read below.
      select t.id, t.name, lt.total
      from live_totals lt
      join terms t on t.id = lt.term_id
      where t.taxonomy_id = (select id from taxonomy)
    ),
    page as (
      select c.id, c.name, t.slug, c.total
      from (
        select *
        from carried c
        order by c.name, c.id
        limit ${limit}::int8
        offset ${offset}::int8
      ) c
      join terms t on t.id = c.id
    )
    select
      ${termListHeader(sql, type)},
      (select count(*) from carried) as total,
      (
        select coalesce(json_agg(json_build_object('id', p.id, 'name', p.name, 'slug', p.slug, 'total', ${termTotal(sql, sql`p.total`)}) order by p.name, p.id), '[]'::json)
        from page p
      ) as terms
  `
}

/**
 * A page term's total (`p` is in scope): its kept live count; or, when another
 * term of the taxonomy has its slug, the live entries that carry any of them,
 * as the list filtered by `taxonomy:slug` counts them (C40, C46).
 */
function termTotal(sql: Sql, keptTotal: PendingQuery<Row[]>): PendingQuery<Row[]> {
  const namesakes = sql`
    select o.id
    from terms o
    where o.taxonomy_id = (select id from taxonomy)
      and o.slug = p.slug
  `
  return sql`
    case
      when exists (${namesakes} and o.id <> p.id) then (
        select count(distinct e.id)
        from entry_terms et
        join entries e on e.id = et.entry_id
        where et.term_id in (${namesakes})
          and e.content_type_id in (select id from counted_types)
          and ${isLive(sql)}
      )
      else ${keptTotal}
    end
  `
}

/** Seconds until the next go-live (C1) of the types in `counted_types`: one index look-up per type. */
function nextGoLive(sql: Sql): PendingQuery<Row[]> {
  return sql`
    (
      select extract(epoch from min(g.at) - now())::float8
      from (
        select (
          select min(e.published_at)
          from entries e
          where e.content_type_id = ct.id
            and e.status = 'published'
            and e.published_at > now()
            -- 'infinity' never comes (and PostgreSQL 15 cannot subtract it: a 500).
            and e.published_at < 'infinity'
        ) as at
        from counted_types ct
      ) g
    )
  `
}
