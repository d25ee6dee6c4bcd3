import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { isMatchable, type ListFilters } from './parameters'
import type { ListPosition } from './cursor'
import { pageAfter, pageByOffset, positionTime, type ListOptions } from './list-pages'
import { highlighted, prefixWord, rankOf, searchQueries, singleWord } from './search-query'
import { commonTables, entryRows, isLive, isDatedLive, isUndatedLive, listOrder, resultHeader, type ResultRow } from './statement-fragments'

/**
 * Which way a filtered list is read (C40–C43), from what the request holds;
 * the statement picks between ways whose choice depends on the data (a term's
 * number of entries) itself, from the kept counts, in the same snapshot.
 * - `author`: the author's range of the index entries_author_list, read from
 *   its start as the unfiltered list reads the type's: the same cost at any
 *   size; the total from the author's kept count.
 * - `term`: one `taxonomy:slug` pair. The total from the term's kept count.
 *   The page walks the type's range and keeps the entries that carry the term
 *   (about per_page ÷ the term's share of the type, whatever the size) when
 *   that reads fewer entries than the term has; otherwise it reads the term's
 *   entries and sorts them (a rare term: few).
 * - `match`: several pairs, or pairs and an author: the entries of the rarest
 *   pair (or of the author, when they are fewer), each checked against the
 *   rest, counted and sorted: the cost of the rarest one's entries.
 * - `search`: the translations that match (search_postings for one word of
 *   a short document, else the GIN indexes of search_documents), each entry's shown
 *   translation (C14) only, checked against the other filters, ranked,
 *   counted and sorted: the cost of the matches (sql/search-structure.md).
 *   By relevance, a word's postings and three letters' search_prefixes are
 *   counted where they are read and paged from their index in rank order
 *   (rankedSearch): the count is their only full read.
 */
export type FilterShape = 'author' | 'term' | 'match' | 'search'

export function shapeOf(filters: ListFilters): FilterShape {
  if (filters.search !== null) return 'search'
  if (filters.terms.length === 0) return 'author'
  if (filters.terms.length === 1 && filters.author === null) return 'term'
  return 'match'
}

/** Whether a list is filtered at all. */
export function isFiltered(filters: ListFilters | undefined): filters is ListFilters {
  return filters !== undefined && (filters.terms.length > 0 || filters.author !== null || filters.search !== null)
}

/**
 * The list statement with filters: the same result as listStatement (the type,
 * the language, the total, one page, whether more follow), over the live
 * entries that pass every filter (C43). Each shape is one statement whose
 * generic plan is its best (see connect.ts): a choice that depends on the
 * data is made at run time by gates on one-row CTEs, never by the planner.
 */
export function filteredListStatement(sql: Sql, options: ListOptions & { filters: ListFilters }): PendingQuery<ResultRow[]> {
  const { type, lang, limit, start, filters, countByScan = false } = options
  const shape = shapeOf(filters)
  const rows = limit + 1
  const relevance = shape === 'search' && filters.order === 'relevance'
  const pageOrder = relevance ? sql`e.rank desc, ${listOrder(sql)}` : listOrder(sql)
  return sql<ResultRow[]>`
    with ${commonTables(sql, type, lang)},
    ${pairsTable(sql, filters)},
    ${shapeTables(sql, shape, filters, start, rows, countByScan)},
    page_entries as (
      select *
      from selected_entries e
      order by ${pageOrder}
      limit ${limit}::int8
    )
    select
      ${resultHeader(sql, options.readGoLive, (options.model ?? null) !== null)},
      (select dated + undated from live_counts) as total,
      (select count(*) from selected_entries) > ${limit}::int8 as has_more,
      ${entryRows(sql, options, pageOrder, relevance ? sql`'rank', e.rank::text,` : sql``, shape === 'search' ? searchHighlights(sql) : undefined)} as rows
  `
}

/**
 * The terms each pair names: `pair` is its place in the list (1-based). A
 * pair that names no term has no row, so no entry passes it (C40: an empty
 * list, never a 404). A pair that cannot match (a NUL) is sent as a null
 * taxonomy, which joins nothing.
 */
function pairsTable(sql: Sql, filters: ListFilters): PendingQuery<Row[]> {
  // As JSON: one parameter whatever the number of pairs, and no array types for the driver to know.
  const pairs = JSON.stringify(filters.terms.map((pair) => (isMatchable(pair) ? [pair.taxonomy, pair.slug] : [null, null])))
  return sql`
    pairs as materialized (
      select p.pair, t.id as term_id
      from jsonb_array_elements(${pairs}::text::jsonb) with ordinality p(value, pair)
      join taxonomies x on x.slug = p.value ->> 0
      join terms t on t.taxonomy_id = x.id and t.slug = p.value ->> 1
    )
  `
}

/**
 * The filters on `e`: every pair carried (AND), and the author. A read driven
 * by the only pair need not check it again (`driverIsOnlyPair`).
 */
function passes(sql: Sql, filters: ListFilters, driverIsOnlyPair = false): PendingQuery<Row[]> {
  const pairs = filters.terms.length
  return sql`
    ${pairs > 0 && !(driverIsOnlyPair && pairs === 1) ? sql`and (
      select count(distinct p.pair)
      from entry_terms et
      join pairs p on p.term_id = et.term_id
      where et.entry_id = e.id
    ) = ${pairs}::int8` : sql``}
    ${filters.author !== null ? sql`and e.author_id = ${filters.author}::int8` : sql``}
  `
}

/** A filter's live entries of the type, dated or not, from the kept counts (sql/live-entry-counts.md). */
function keptCount(sql: Sql, kind: 'term' | 'author', keys: PendingQuery<Row[]>, dated: boolean): PendingQuery<Row[]> {
  return sql`(
    select coalesce(sum(d.delta), 0)::int8
    from live_filter_count_deltas d
    where d.kind = ${kind}
      and d.key in (${keys})
      and d.content_type_id = (select id from content_type)
      and ${dated ? sql`d.live_from <= now()` : sql`d.live_from is null`}
  )`
}

/** live_counts (dated, undated) of the candidates: what a match or a search costs anyway. */
const COUNTED_CANDIDATES = (sql: Sql) => sql`
  live_counts as (
    select count(*) filter (where published_at is not null) as dated, count(*) filter (where published_at is null) as undated
    from candidates
  )
`

function shapeTables(sql: Sql, shape: FilterShape, filters: ListFilters, start: ListOptions['start'], rows: number, countByScan: boolean): PendingQuery<Row[]> {
  switch (shape) {
    case 'author':
      return authorTables(sql, filters, start, rows, countByScan)
    case 'term':
      return termTables(sql, filters, start, rows, countByScan)
    case 'match':
      return sql`${matchCandidates(sql, filters)}, ${COUNTED_CANDIDATES(sql)}, ${candidatePage(sql, start, rows, false)}`
    case 'search': {
      const relevance = filters.order === 'relevance'
      const ranked = rankedSearch(sql, filters)
      if (ranked === null) return sql`${searchCandidates(sql, filters, false)}, ${COUNTED_CANDIDATES(sql)}, ${candidatePage(sql, start, rows, relevance)}`
      // The selected language's one-word matches are counted where they are read, and paged from
      // their index in rank order: its first rows only (sql/search-structure.md, 0017).
      const ranks = 'offset' in start ? start.offset + rows : rows
      // After a cursor: its place, and a bound on the rank the index seeks to (the rows before it are not read).
      const where = 'after' in start ? sql`${after(sql, start.after, true)} and c.rank <= ${start.after.rank ?? '0'}::real` : sql`true`
      return sql`
        ${searchCandidates(sql, filters, true)},
        live_counts as (
          select stored.dated + ranked.dated as dated, stored.undated + ranked.undated as undated
          from (select count(*) filter (where published_at is not null) as dated, count(*) filter (where published_at is null) as undated from candidates) stored
          cross join (select count(*) filter (where published_at is not null) as dated, count(*) filter (where published_at is null) as undated from (${ranked.all}) c) ranked
        ),
        selected_entries as (${candidateRows(sql, start, rows, true, sql`(select * from candidates union all ${ranked.page(where, ranks)})`)})
      `
    }
  }
}

function authorTables(sql: Sql, filters: ListFilters, start: ListOptions['start'], rows: number, countByScan: boolean): PendingQuery<Row[]> {
  const author = sql`${filters.author}::int8`
  const counts = countByScan
    ? sql`
      live_counts as (
        select
          (select count(*) from entries e where ${isDatedLive(sql)} and e.author_id = ${author}) as dated,
          (select count(*) from entries e where ${isUndatedLive(sql)} and e.author_id = ${author}) as undated
      )
    `
    : sql`
      live_counts as (
        select ${keptCount(sql, 'author', author, true)} as dated, ${keptCount(sql, 'author', author, false)} as undated
      )
    `
  return sql`${counts}, ${walkPages(sql, start, rows, sql`and e.author_id = ${author}`)}`
}

/**
 * One pair. Walking the type's range reads about (offset + per_page) × (the
 * type's live entries ÷ the term's) entries; reading the term's entries reads
 * the term's. The statement walks when the first is the smaller.
 */
function termTables(sql: Sql, filters: ListFilters, start: ListOptions['start'], rows: number, countByScan: boolean): PendingQuery<Row[]> {
  const depth = 'offset' in start ? start.offset + rows : rows
  const terms = sql`select term_id from pairs`
  return sql`
    type_live as (
      select coalesce(sum(d.delta), 0)::float8 as live
      from live_entry_count_deltas d
      where d.content_type_id = (select id from content_type)
        and (d.live_from <= now() or d.live_from is null)
    ),
    kept as (
      select ${keptCount(sql, 'term', terms, true)} as dated, ${keptCount(sql, 'term', terms, false)} as undated
    ),
    strategy as (
      select
        (select count(*) from pairs) = 1 and not ${countByScan}::bool as kept_is_exact,
        ${depth}::float8 * (select live from type_live) <= ((select dated + undated from kept)::float8) ^ 2 as walk
    ),
    ${matchCandidates(sql, filters, sql`and not ((select walk from strategy) and (select kept_is_exact from strategy))`)},
    live_counts as (
      select
        case when (select kept_is_exact from strategy) then (select dated from kept)
          else (select count(*) from candidates where published_at is not null) end as dated,
        case when (select kept_is_exact from strategy) then (select undated from kept)
          else (select count(*) from candidates where published_at is null) end as undated
    ),
    match_page as (
      select *
      from (${candidateRows(sql, start, rows, false)}) page
      where not (select walk from strategy)
    ),
    ${walkPages(sql, start, rows, sql`and (select walk from strategy) ${passes(sql, filters)}`, true)}
  `
}

/**
 * The page from the index range (as listStatement reads it), with a filter;
 * with `withMatchPage`, also match_page (the term shape reads one of the two).
 */
function walkPages(sql: Sql, start: ListOptions['start'], rows: number, filter: PendingQuery<Row[]>, withMatchPage = false): PendingQuery<Row[]> {
  return sql`
    ${'offset' in start ? pageByOffset(sql, rows, start.offset, filter) : pageAfter(sql, rows, start.after, filter)},
    selected_entries as (
      select *, null::real as rank
      from dated_page
      union all
      select *, null::real
      from undated_page
      ${withMatchPage ? sql`union all select * from match_page` : sql``}
    )
  `
}

/**
 * The entries that carry the rarest pair, or that the author has (when fewer),
 * and pass every other filter. `gate` can keep it from being read at all.
 */
function matchCandidates(sql: Sql, filters: ListFilters, gate: PendingQuery<Row[]> = sql``): PendingQuery<Row[]> {
  const author = filters.author
  const authorLive = author === null ? sql`null::int8` : sql`(${keptCount(sql, 'author', sql`${author}::int8`, true)} + ${keptCount(sql, 'author', sql`${author}::int8`, false)})`
  return sql`
    driver as (
      select p.pair, ${author === null ? sql`true` : sql`p.live <= ${authorLive}`} as by_pair
      from (
        select g.pair, (
          select coalesce(sum(d.delta), 0)
          from live_filter_count_deltas d
          where d.kind = 'term'
            and d.key in (select term_id from pairs where pairs.pair = g.pair)
            and d.content_type_id = (select id from content_type)
            and (d.live_from <= now() or d.live_from is null)
        ) as live
        from generate_series(1, ${filters.terms.length}::int8) g(pair)
      ) p
      order by p.live, p.pair
      limit 1
    ),
    candidates as materialized (
      select e.id, e.published_at, null::real as rank
      from entries e
      where e.id in (
          select et.entry_id
          from entry_terms et
          where et.term_id in (select term_id from pairs where pairs.pair = (select pair from driver))
        )
        and e.content_type_id = (select id from content_type)
        and ${isLive(sql)}
        and (select by_pair from driver)
        ${gate}
        ${passes(sql, filters, true)}
      ${author === null ? sql`` : sql`
      union all
      select e.id, e.published_at, null::real
      from entries e
      where e.content_type_id = (select id from content_type)
        and e.author_id = ${author}::int8
        and ${isLive(sql)}
        and not (select by_pair from driver)
        ${gate}
        ${passes(sql, filters)}
      `}
    )
  `
}

/**
 * C42: the entries whose shown translation (C14: the selected language's,
 * else the default language's) matches, with that translation's language's
 * text search configuration, ranked (ts_rank_cd; title A, excerpt B, body C).
 */
function searchCandidates(sql: Sql, filters: ListFilters, ranked: boolean): PendingQuery<Row[]> {
  const text = searchText(filters)
  return sql`
    ${languageHits(sql, 'selected', text)},
    ${languageHits(sql, 'fallback', text)},
    candidates as materialized (
      select e.id, e.published_at, e.rank
      from (
        select *
        from ${ranked ? sql`selected_stored` : sql`selected_hits`}
        union all
        select *
        from fallback_hits h
        -- C14: an entry with a translation in the selected language shows that one, never this.
        where not exists (
          select 1
          from entry_translations shown
          where shown.entry_id = h.id
            and shown.language_code = (select selected from language)
        )
      ) e
      where true ${passes(sql, filters)}
    )
  `
}

/**
 * The live translations of the type, in the selected language or in the
 * fallback one (only when it is another), that match the search, with their
 * rank: `{side}_search` (the queries), `{side}_hits` (entry id, publication
 * time, author, rank), read once by the candidates. Found through the GIN
 * indexes of search_documents, whose entry's guard (one narrow row per entry)
 * says whether it is live and of the type. A search of one word (as typed:
 * C55) whose queries have at most one lexeme each reads the short documents'
 * matches from search_postings' ranges instead (index-only, the entry's state
 * on each posting), the choice made at run time from the queries; long
 * documents have no postings (sql/search-structure.md).
 */
function languageHits(sql: Sql, side: 'selected' | 'fallback', text: string): PendingQuery<Row[]> {
  const language = side === 'selected' ? sql`(select selected from language)` : sql`(select fallback from language)`
  const queries = searchQueries(sql, text, sql`vitrine_search_config(${language})`)
  const searchTable = sql(`${side}_search`)
  const withPrefix = prefixWord(text) !== null
  const exact = sql`(select exact from ${searchTable})`
  const query = sql`(select query from ${searchTable})`
  const other = side === 'fallback' ? sql`and (select selected from language) <> (select fallback from language)` : sql``
  const word = singleWord(text)
  const postings = word === null ? null : postedHits(sql, side, language, word, withPrefix, other)
  // The matching documents of one GIN index (`posted` or not: each has its own), live and of the
  // type as their entry's guard says (sql/search-structure.md), ranked from their vectors.
  const indexedHits = (posted: PendingQuery<Row[]>) => sql`
    select s.entry_id as id, g.published_at, g.author_id, ${rankOf(sql, sql`s.document`, exact, query, withPrefix)} as rank
    from search_documents s
    join entry_guards g on g.entry_id = s.entry_id
    where ${posted}
      and s.document @@ ${query}
      and s.language_code = ${language}
      and ${liveInType(sql, sql`g`)}
      ${other}
  `
  return sql`
    ${searchTable} as (
      select ${queries.exact} as exact, ${queries.query} as query
    ),
    ${postings === null ? sql`` : postings.tables}
    -- Fenced: the planner would AND the GIN index with another one's bitmap. Long documents (not
    -- posted) always come from here; short ones only when the postings do not answer the search.
    ${sql(`${side}_indexed`)} as materialized (
      ${indexedHits(sql`not s.posted`)}
      union all
      ${indexedHits(sql`s.posted`)}
        ${postings === null ? sql`` : sql`and not ${postings.chosen}`}
    ),
    -- Not fenced: the postings' rows go straight into the candidates, stored once.
    ${sql(`${side}_hits`)} as (
      select *
      from ${sql(`${side}_indexed`)}
      ${postings === null ? sql`` : sql`union all ${postings.hits}`}
    ),
    -- The same but the rows a search read in rank order gives (rankedSearch): stored.
    ${sql(`${side}_stored`)} as (
      select *
      from ${sql(`${side}_indexed`)}
      ${postings === null || postings.grouped === null ? sql`` : sql`union all ${postings.grouped}`}
    )
  `
}

/**
 * The hits of a one-word search from search_postings: the range of the
 * word's lexeme, or with a prefix (C55) the ranges of the words that its
 * lexemes as written and as stemmed begin (one range when one of them begins
 * the other). An entry's rank is its exact lexeme's score (ts_rank_cd of a
 * one-lexeme query), else, for a prefix-only match, rankOf's mapping of the
 * sum of its matching lexemes' scores (ts_rank_cd of the prefix query).
 * `chosen`: whether the queries allow it (at most one lexeme each). Three
 * letters that are their one range's lexeme (`bif`, as written and stemmed)
 * read each entry's sum as search_prefixes keeps it (0016) instead of
 * grouping the postings: 60 000 rows instead of 79 000 postings to group.
 */
function postedHits(sql: Sql, side: 'selected' | 'fallback', language: PendingQuery<Row[]>, word: string, withPrefix: boolean, other: PendingQuery<Row[]>) {
  const words = sql(`${side}_words`)
  const ranges = sql(`${side}_ranges`)
  const prefixes = sql(`${side}_prefixes`)
  const lexemeOf = (query: PendingQuery<Row[]>) => sql`case when numnode(${query}) = 1 then (select u.lexeme from unnest(${query}::text::tsvector) u) end`
  const stemmed = sql`websearch_to_tsquery(vitrine_search_config(${language}), ${word})`
  const written = sql`websearch_to_tsquery('simple', ${word})`
  const exact = sql`(select exact from ${words})`
  const postings = sql`
    ${ranges} r
    cross join lateral (
      select *
      from search_postings s
      where s.language_code = ${language}
        and s.lexeme >= r.low collate "C"
        and s.lexeme <= r.high collate "C"
        and ${liveInType(sql, sql`s`)}
    ) p
    where (select chosen from ${words})
      ${withPrefix ? sql`and not (select kept from ${prefixes})` : sql``}
      ${other}
  `
  const rank = sql`case when bool_or(p.lexeme = ${exact}) then max(p.score) filter (where p.lexeme = ${exact})::real else (-1 / (1 + sum(p.score)::real::float8))::real end`
  const grouped = withPrefix
    ? sql`
      select p.entry_id as id, max(p.published_at) as published_at, max(p.author_id) as author_id, ${rank} as rank
      from ${postings}
      group by p.entry_id
    `
    : null
  // Three letters whose one range is their own lexeme: the entries' sums as search_prefixes keeps them.
  const kept = sql`
    select k.entry_id as id, k.published_at, k.author_id, ${keptPrefixRank(sql, sql`k`)} as rank
    from ${ranges} r
    cross join lateral (
      select *
      from search_prefixes k
      where k.language_code = ${language}
        and k.prefix = r.low collate "C"
        and ${liveInType(sql, sql`k`)}
    ) k
    where (select kept from ${prefixes})
      ${other}
  `
  return {
    chosen: sql`(select chosen from ${words})`,
    tables: sql`
      ${words} as (
        select
          numnode(${stemmed}) <= 1 and numnode(${written}) <= 1 as chosen,
          ${lexemeOf(stemmed)} as exact,
          ${withPrefix ? lexemeOf(written) : sql`null::text`} as written
      ),
      ${ranges} as (
        select distinct v.lexeme as low, ${withPrefix ? sql`v.lexeme || U&'\\+10FFFF'` : sql`v.lexeme`} as high
        from ${words} w
        cross join lateral (values (w.exact), (w.written)) v(lexeme)
        where w.chosen
          and v.lexeme is not null
          ${withPrefix ? sql`and not exists (
            select 1
            from (values (w.exact), (w.written)) o(lexeme)
            where o.lexeme <> v.lexeme
              and starts_with(v.lexeme, o.lexeme)
          )` : sql``}
      ),
      ${withPrefix ? sql`${prefixes} as (
        select coalesce(count(*) = 1 and bool_and(length(r.low) = 3 and r.low = w.exact), false) as kept
        from ${ranges} r
        cross join ${words} w
      ),` : sql``}
    `,
    // A word alone: one lexeme, each entry once, its score its rank. With a prefix, an entry's
    // matching lexemes are summed (grouped by the entry alone: the narrowest groups).
    hits: grouped === null
      ? sql`
        select p.entry_id as id, p.published_at, p.author_id, p.score::real as rank
        from ${postings}
      `
      : sql`${grouped} union all ${kept}`,
    // What rankedSearch does not read from search_prefixes: the postings grouped (other prefixes).
    grouped,
  }
}

/**
 * C55: the rank of an entry's row of search_prefixes: the three-letter word's
 * own score (an exact match), else the prefix's, below every exact one. The
 * same expression as the index search_prefixes_ranked (0017), which the
 * page reads in its order.
 */
function keptPrefixRank(sql: Sql, row: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`coalesce(${row}.exact::real, (-1 / (1 + ${row}.score::real::float8))::real)`
}

/** C1 as a kept row says it (a row of entry_guards or search_postings): its entry is live, and of the list's type. */
function liveInType(sql: Sql, row: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`${row}.content_type_id = (select id from content_type) and ${row}.published and (${row}.published_at is null or ${row}.published_at <= now())`
}

/**
 * C55: the highlights of the entry `e`, from its shown translation (C14): the
 * one the search matched, with the query of its language.
 */
function searchHighlights(sql: Sql): PendingQuery<Row[]> {
  const config = sql`vitrine_search_config(t.language_code)`
  const query = sql`(case when t.language_code = (select selected from language) then (select query from selected_search) else (select query from fallback_search) end)`
  return sql`
    (
      select json_build_object('title', ${highlighted(sql, config, sql`t.title`, query)}, 'excerpt', ${highlighted(sql, config, sql`t.excerpt`, query)})
      from entry_translations t
      where t.entry_id = e.id
        and t.language_code in ((select selected from language), (select fallback from language))
      order by t.language_code = (select selected from language) desc
      limit 1
    )
  `
}

/**
 * A search by relevance of one word, with no filter: the selected language's matches that are one
 * row per entry (a word's postings; three letters' search_prefixes, 0016) are
 * read in rank order from their indexes (0017) for the page, and counted
 * where they are read. `all`: every such match; `page(where, depth)`: the
 * first `depth` of them in rank and list order that pass `where` (on `c`).
 * Null for other searches, which store and sort their matches.
 */
function rankedSearch(sql: Sql, filters: ListFilters) {
  const text = searchText(filters)
  const word = singleWord(text)
  // An author's matches may be few among the word's: read in rank order, the page could not stop early.
  if (filters.terms.length > 0 || filters.author !== null || filters.order !== 'relevance' || word === null) return null
  const language = sql`(select selected from language)`
  // A word: its postings, one per entry. Three letters (0016): their prefix rows, when kept.
  const rows = prefixWord(text) === null
    ? { table: sql`search_postings`, rank: sql`s.score::real`, key: sql`s.lexeme = (select exact from selected_words) collate "C"`, gate: sql`(select chosen from selected_words)` }
    : { table: sql`search_prefixes`, rank: keptPrefixRank(sql, sql`s`), key: sql`s.prefix = (select r.low from selected_ranges r limit 1) collate "C"`, gate: sql`(select kept from selected_prefixes)` }
  const source = (order: boolean, where: PendingQuery<Row[]>, depth: number) => sql`(
    select c.*
    from (
      select s.entry_id as id, s.published_at, ${rows.rank} as rank
      from ${rows.table} s
      where s.language_code = ${language}
        and ${rows.key}
        and ${liveInType(sql, sql`s`)}
    ) c
    where ${rows.gate}
      and ${where}
    ${order ? sql`order by c.rank desc, c.published_at desc nulls last, c.id desc limit ${depth}::int8` : sql``}
  )`
  return {
    all: source(false, sql`true`, 0),
    page: (where: PendingQuery<Row[]>, depth: number) => source(true, where, depth),
  }
}

/** C42: the search text; PostgreSQL text holds no NUL: a NUL separates words as a space would. */
function searchText(filters: ListFilters): string {
  return (filters.search ?? '').replaceAll('\u0000', ' ')
}

/** selected_entries from the candidates: one page of them, in the list's order. */
function candidatePage(sql: Sql, start: ListOptions['start'], rows: number, relevance: boolean): PendingQuery<Row[]> {
  return sql`
    selected_entries as (${candidateRows(sql, start, rows, relevance)})
  `
}

/** A page of the candidates as entries rows with their rank: after an offset, or right after a place (C39). */
function candidateRows(sql: Sql, start: ListOptions['start'], rows: number, relevance: boolean, source: PendingQuery<Row[]> = sql`candidates`): PendingQuery<Row[]> {
  const order = relevance ? sql`c.rank desc, c.published_at desc nulls last, c.id desc` : sql`c.published_at desc nulls last, c.id desc`
  return sql`
    select e.*, p.rank
    from (
      select c.id, c.rank
      from ${source} c
      where ${'after' in start ? after(sql, start.after, relevance) : sql`true`}
      order by ${order}
      ${'offset' in start ? sql`offset ${start.offset}::int8` : sql``}
      limit ${rows}::int8
    ) p
    -- One primary-key lookup per row of the page, whatever the planner guesses of the candidates (a
    -- generic plan: a guess of millions made it hash the whole entries table for a page of 21).
    -- C1 on the entry's own row (C56): whatever a kept row said of it, an entry not live, or moved to
    -- another type, is never answered.
    cross join lateral (
      select *
      from entries e
      where e.id = p.id
        and e.content_type_id = (select id from content_type)
        and ${isLive(sql)}
      offset 0
    ) e
  `
}

/** `c` comes after a place: in list order (C11), or by rank first (C42). */
function after(sql: Sql, place: ListPosition, relevance: boolean): PendingQuery<Row[]> {
  const inListOrder =
    place.publishedAt === null
      ? sql`(c.published_at is null and c.id < ${place.id}::int8)`
      : sql`(c.published_at < ${positionTime(sql, place.publishedAt)} or (c.published_at = ${positionTime(sql, place.publishedAt)} and c.id < ${place.id}::int8) or c.published_at is null)`
  if (!relevance) return inListOrder
  const rank = sql`${place.rank ?? '0'}::real`
  return sql`(c.rank < ${rank} or (c.rank = ${rank} and ${inListOrder}))`
}
