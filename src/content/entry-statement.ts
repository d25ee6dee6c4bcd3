import type { PendingQuery } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { commonTables, completeRow, entryRows, headerOf, isLive, languagesOf, NO_DEADLINE, resultHeader, typeOfResult, type EntryRow, type Languages, type ResultRow, type RowContents } from './statement-fragments'

export interface EntryMatch {
  typeExists: boolean
  typeId: number | null
  goLiveInSeconds: number | null
  languages: Languages
  row: EntryRow | null
}

export interface FindOptions extends RowContents {
  timeoutMs?: number
  type: string
  lang: string | undefined
  /** null matches no entry. */
  slug: string | null
}

/**
 * The single-entry endpoint in one statement (C19): the live entry of the type
 * whose translation in the selected language has this slug; failing that, one
 * with no translation in that language whose default-language slug matches.
 * The lowest id wins a tie.
 * @example await findLiveEntryBySlug(sql, { type: 'page', lang: undefined, slug: 'about-us' })
 */
export async function findLiveEntryBySlug(sql: Sql, options: FindOptions): Promise<EntryMatch> {
  const [result] = await runRead(sql, (db) => findStatement(db, options), options.timeoutMs ?? NO_DEADLINE, { answerType: typeOfResult })
  const languages = languagesOf(result)
  return { ...headerOf(result), languages, row: result.rows[0] ? completeRow(result.rows[0], languages) : null }
}

/** The statement of `findLiveEntryBySlug`, not yet sent. */
export function findStatement(sql: Sql, options: FindOptions): PendingQuery<ResultRow[]> {
  const { type, lang, slug } = options
  return sql<ResultRow[]>`
    with ${commonTables(sql, type, lang)},
    page_entries as (
      select e.*
      from entries e
      where e.id = (
        select id
        from (
          (
            select e.id, 0 as preference
            from entry_translations t
            join entries e on e.id = t.entry_id
            where t.language_code = (select selected from language)
              and t.slug = ${slug}
              and e.content_type_id = (select id from content_type)
              and ${isLive(sql)}
            order by e.id
            limit 1
          )
          union all
          (
            select e.id, 1 as preference
            from entry_translations t
            join entries e on e.id = t.entry_id
            where t.language_code = (select fallback from language)
              and t.slug = ${slug}
              and e.content_type_id = (select id from content_type)
              and ${isLive(sql)}
              and not exists (
                select 1
                from entry_translations selected_translation
                where selected_translation.entry_id = e.id
                  and selected_translation.language_code = (select selected from language)
              )
            order by e.id
            limit 1
          )
        ) candidates
        order by preference
        limit 1
      )
    )
    select
      ${resultHeader(sql)},
      0 as total,
      ${entryRows(sql, options)} as rows
  `
}
