import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'

/*
 * The text search of a list (C42, C55) as tsqueries, and the highlights of
 * the items it finds: the fragments the filtered list statement composes.
 */

/** C55: a last word of fewer letters or digits than this is not read as a prefix. */
export const MIN_PREFIX_LENGTH = 2

/** The search text cut before its last word, when that word is also a prefix (C55). */
export interface PrefixWord {
  /** The text before the last word, as sent. */
  head: string
  /** The last word, as sent. */
  word: string
  /** The head ends with `or` (websearch_to_tsquery's OR): the word is an alternative, not one more word. */
  alternative: boolean
}

/**
 * C55: the last word of `text`, when bare (not quoted, not negated, no space
 * after it) and holding at least two letters or digits; null otherwise. Pure.
 * @example prefixWord('coffee archi') // { head: 'coffee ', word: 'archi', alternative: false }
 * @example prefixWord('coffee archi ') // null
 * @example prefixWord('"coffee archi') // null
 */
export function prefixWord(text: string): PrefixWord | null {
  const match = /^(.*?)(\S+)$/su.exec(text)
  if (!match) return null
  const [, head, word] = match as unknown as [string, string, string]
  // Inside a quoted phrase (an odd number of quotes before it), or quoted itself, or negated.
  if ((head.match(/"/g)?.length ?? 0) % 2 === 1 || word.includes('"') || word.startsWith('-')) return null
  if ((word.match(/[\p{L}\p{N}]/gu)?.length ?? 0) < MIN_PREFIX_LENGTH) return null
  const alternative = /\S\s+or\s+$/iu.test(head)
  return { head, word, alternative }
}

/**
 * The one word a search is made of, as sent (blanks around it aside), when
 * it is one bare word: no quote, not negated; null otherwise. Pure.
 * @example singleWord('archi') // 'archi'
 * @example singleWord('"archi"') // null
 */
export function singleWord(text: string): string | null {
  const word = /^\s*([^\s"]+)\s*$/u.exec(text)?.[1]
  return word === undefined || word.startsWith('-') ? null : word
}

/**
 * The search's tsqueries, in the configuration `config` (SQL of a regconfig):
 * `exact`, websearch_to_tsquery of the text (C42), and `query`, what a
 * translation must match: `exact`, or with the last word as a prefix (C55),
 * `exact || (head & word:*)` (`|` after `or`). The prefix is the word's
 * lowercase lexemes as written (the `simple` configuration) and as the
 * language stems them: "archi" finds "architecture" (stemmed `architectur`),
 * "studie" finds "studies" (`studi`).
 */
export function searchQueries(sql: Sql, text: string, config: PendingQuery<Row[]>): { exact: PendingQuery<Row[]>; query: PendingQuery<Row[]> } {
  const exact = sql`websearch_to_tsquery(${config}, ${text})`
  const prefix = prefixWord(text)
  if (prefix === null) return { exact, query: exact }
  const asPrefix = (lexemes: PendingQuery<Row[]>) => sql`(
    case when numnode(${lexemes}) = 0 then ''::tsquery else (${lexemes}::text || ':*')::tsquery end
  )`
  const prefixes = sql`(${asPrefix(sql`websearch_to_tsquery('simple', ${prefix.word})`)} || ${asPrefix(sql`websearch_to_tsquery(${config}, ${prefix.word})`)})`
  const head = sql`websearch_to_tsquery(${config}, ${prefix.head})`
  return {
    exact,
    query: sql`(
      case when numnode(${prefixes}) = 0 then ${exact}
        else ${exact} || (${head} ${prefix.alternative ? sql`||` : sql`&&`} ${prefixes}) end
    )`,
  }
}

/**
 * A translation's rank against the search (C42: ts_rank_cd over the weighted
 * document; C55: an exact match ranks above a prefix-only one). A prefix-only
 * match's rank is mapped into (-1, 0), in the same order: below every exact
 * match's, which is never negative, and one `real` a cursor can hold.
 */
export function rankOf(sql: Sql, document: PendingQuery<Row[]>, exact: PendingQuery<Row[]>, query: PendingQuery<Row[]>, withPrefix: boolean): PendingQuery<Row[]> {
  if (!withPrefix) return sql`ts_rank_cd(${document}, ${exact})`
  return sql`
    case when ${document} @@ ${exact} then ts_rank_cd(${document}, ${exact})
      else (-1 / (1 + ts_rank_cd(${document}, ${query})::float8))::real end
  `
}

/** The options of ts_headline for C55: the whole field, each matching word in `<mark>`. */
const HEADLINE_OPTIONS = 'StartSel=<mark>, StopSel=</mark>, HighlightAll=true'

/**
 * C55: `text` HTML-escaped, then each word matching `query` wrapped in
 * `<mark>`…`</mark>`: escaped first, so that only `<mark>` is markup. The
 * parser reads an escaped character (`&amp;`) as one entity, never as the
 * word `amp`. Null stays null.
 */
export function highlighted(sql: Sql, config: PendingQuery<Row[]>, text: PendingQuery<Row[]>, query: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`ts_headline(${config}, ${escapeHtml(sql, text)}, ${query}, ${HEADLINE_OPTIONS})`
}

/** `&`, `<`, `>`, `"` and `'` as HTML character references (`&` first). */
function escapeHtml(sql: Sql, text: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`replace(replace(replace(replace(replace(${text}, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&#39;')`
}
