import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { StatementTexts } from '../db/statement-text'
import { READ_EVERY_TIME } from '../cache/next-go-lives'
import { filteredListStatement, isFiltered, shapeOf } from './filtered-list-statement'
import { pageAfter, pageByOffset, type ListOptions } from './list-pages'
import { commonTables, completeRow, entryRows, headerOf, isDatedLive, isUndatedLive, languagesOf, listOrder, NO_DEADLINE, resultHeader, typeOfResult, type EntryRow, type Languages, type ResultRow } from './statement-fragments'

export interface EntryPage {
  /** False when `{type}` names no content type (C5). */
  typeExists: boolean
  /** The content type's id, null when it does not exist. */
  typeId: number | null
  /** Seconds until the type's next go-live (an embargoed entry's publication time, C1), null when none is ahead. */
  goLiveInSeconds: number | null
  languages: Languages
  /** Live entries of the type, in every language (C18). */
  total: number
  rows: EntryRow[]
  /** More live entries follow the page's last one (C39). */
  hasMore: boolean
}

/**
 * The list endpoint in one statement: the content type, the language in
 * effect, the count of live entries (C18) and one page of them in list order
 * (C11), each with its translation, author, image variants and terms, and
 * whether a live entry follows the page (one more is selected, not built).
 * @example await listLiveEntries(sql, { type: 'post', lang: 'fr', limit: 20, start: { offset: 0 } })
 */
export async function listLiveEntries(sql: Sql, options: ListOptions): Promise<EntryPage> {
  const goLive = options.goLives?.before(options.type) ?? READ_EVERY_TIME
  const [result] = await runRead(sql, (db) => listStatement(db, { ...options, readGoLive: goLive.read }), options.timeoutMs ?? NO_DEADLINE, { heavy: isHeavyList(options), answerType: typeOfResult })
  const languages = languagesOf(result)
  const goLiveInSeconds = goLive.settle(result.type_id, result.go_live_in)
  return { ...headerOf(result), goLiveInSeconds, languages, total: result.total, rows: result.rows.map((row) => completeRow(row, languages, result.content_type)), hasMore: result.has_more === true }
}

/** From this many live entries deep, a page by number reads what it skips: its cost grows with the data (C47). */
export const DEEP_OFFSET = 1000

/**
 * C47: whether a list statement's cost grows with the data, so that it runs in
 * the pool's heavy lane (src/db/lanes.ts): a page by number from DEEP_OFFSET
 * on (a cursor page never: it starts at its place), a search and several
 * filters at once (the cost of their matches), and any list of a type whose
 * kept counts drifted (counted one by one). One term and an author read index
 * ranges: cheap at any size, deep pages aside.
 * @example isHeavyList({ type: 'post', lang: undefined, limit: 20, start: { offset: 20_000 } }) // true
 */
export function isHeavyList(options: Pick<ListOptions, 'start' | 'countByScan' | 'filters'>): boolean {
  const { start, countByScan = false, filters } = options
  if (countByScan || ('offset' in start && start.offset >= DEEP_OFFSET)) return true
  if (!isFiltered(filters)) return false
  const shape = shapeOf(filters)
  return shape === 'search' || shape === 'match'
}

/**
 * The statement of `listLiveEntries`, not yet sent (the benchmark explains it).
 *
 * Live entries (C1) of a type are two ranges of the index entries_published_list:
 * dated ones from now() down, then undated ones (they sort last, C11). Each range
 * is read from its start, so embargoed entries are never visited. The kept counts
 * (sql/live-entry-counts.md) say how many live entries each range holds: the total
 * (C18), and where a page by offset starts in the undated range.
 */
export function listStatement(sql: Sql, options: ListOptions): PendingQuery<ResultRow[]> {
  const { type, lang, limit, start, filters } = options
  if (isFiltered(filters)) return filteredListStatement(sql, { ...options, filters })
  // One more row than the page is selected, not built: whether a live entry follows it (C39).
  const page = { type, lang, limit, rows: limit + 1 }
  const shape = `${options.model ? [...options.model].sort().join(',') : '-'} ${options.alternates ? 'alternates' : ''} ${options.highlights ? 'highlights' : ''} ${options.countByScan ? 'scan' : ''} ${options.readGoLive === false ? 'go-live known' : ''}`
  if ('offset' in start) return listTexts.byOffset.run(sql, shape, (value) => composeList(sql, options, value, { offset: value.offset }), { ...page, offset: start.offset })
  const { publishedAt, id } = start.after
  if (publishedAt === null) return listTexts.afterUndated.run(sql, shape, (value) => composeList(sql, options, value, { after: { publishedAt: null, id: value.id } }), { ...page, id })
  return listTexts.afterDated.run(
    sql,
    shape,
    (value) => composeList(sql, options, value, { after: { publishedAt: { seconds: value.seconds, microseconds: value.microseconds }, id: value.id } }),
    { ...page, ...publishedAt, id },
  )
}

type PageValues = {
  type: string
  lang: string | undefined
  limit: number
  rows: number
}

/**
 * The unfiltered list statement's text per shape and way in (issue 45): composed from its fragments
 * once, then made with each request's values (src/db/statement-text.ts). Composing it, about 40
 * fragments, each a promise of postgres.js, was about 6% of the process's CPU per uncached page.
 */
const listTexts = {
  byOffset: new StatementTexts<PageValues & { offset: number }>(['type', 'lang', 'limit', 'rows', 'offset']),
  afterDated: new StatementTexts<PageValues & { seconds: number; microseconds: number; id: number }>(['type', 'lang', 'limit', 'rows', 'seconds', 'microseconds', 'id']),
  afterUndated: new StatementTexts<PageValues & { id: number }>(['type', 'lang', 'limit', 'rows', 'id']),
}

/** listStatement's text, of `options`' shape, with `page`'s values and `start` (stand-ins while flattened; test/statement-text.test.ts composes it with values). */
export function composeList(sql: Sql, options: ListOptions, { type, lang, limit, rows }: PageValues, start: ListOptions['start']): PendingQuery<ResultRow[]> {
  return sql<ResultRow[]>`
    with ${commonTables(sql, type, lang)},
    ${liveCounts(sql, options.countByScan ?? false)},
    ${'offset' in start ? pageByOffset(sql, rows, start.offset) : pageAfter(sql, rows, start.after)},
    selected_entries as (
      select *
      from dated_page
      union all
      select *
      from undated_page
    ),
    page_entries as (
      select *
      from selected_entries e
      order by ${listOrder(sql)}
      limit ${limit}::int8
    )
    select
      ${resultHeader(sql, options.readGoLive, (options.model ?? null) !== null)},
      (select dated + undated from live_counts) as total,
      (select count(*) from selected_entries) > ${limit}::int8 as has_more,
      ${entryRows(sql, options)} as rows
  `
}

/** The type's live entries, dated and undated: read from the kept counts, or counted one by one. */
function liveCounts(sql: Sql, countByScan: boolean): PendingQuery<Row[]> {
  if (countByScan) {
    return sql`
      live_counts as (
        select
          (
            select count(*)
            from entries e
            where ${isDatedLive(sql)}
          ) as dated,
          (
            select count(*)
            from entries e
            where ${isUndatedLive(sql)}
          ) as undated
      )
    `
  }
  return sql`
    live_counts as (
      select
        (
          select coalesce(sum(d.delta), 0)::int8
          from live_entry_count_deltas d
          where d.content_type_id = (select id from content_type)
            and d.live_from <= now()
        ) as dated,
        (
          select coalesce(sum(d.delta), 0)::int8
          from live_entry_count_deltas d
          where d.content_type_id = (select id from content_type)
            and d.live_from is null
        ) as undated
    )
  `
}
