import type { PendingQuery } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { StatementTexts } from '../db/statement-text'
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
  const { type, lang, slug } = options
  const shape = `${options.model ? [...options.model].sort().join(',') : '-'} ${options.alternates ? 'alternates' : ''} ${options.highlights ? 'highlights' : ''}`
  const statement = (db: Sql) => findTexts.run(db, shape, (value) => findStatement(db, { ...options, ...value }), { type, lang, slug })
  const [result] = await runRead(sql, statement, options.timeoutMs ?? NO_DEADLINE, { answerType: typeOfResult })
  const languages = languagesOf(result)
  return { ...headerOf(result), languages, row: result.rows[0] ? completeRow(result.rows[0], languages) : null }
}

/** The statement's text per shape: what the model holds, alternates, highlights (issue 45). */
const findTexts = new StatementTexts<Pick<FindOptions, 'type' | 'lang' | 'slug'>>(['type', 'lang', 'slug'])

/** The statement of `findLiveEntryBySlug`, not yet sent. */
export function findStatement(sql: Sql, options: FindOptions): PendingQuery<ResultRow[]> {
  const { type, lang, slug } = options
  return sql<ResultRow[]>`
    with ${commonTables(sql, type, lang)},
    page_entries as (
      -- One range of entry_translations_language_slug for both languages; the selected
      -- language's match first, else one without a row in it (C19); the lowest id of each.
      select e.*
      from language l
      join entry_translations t on t.slug = ${slug} and t.language_code in (l.selected, l.fallback)
      join entries e on e.id = t.entry_id
      where e.content_type_id = (select id from content_type)
        and ${isLive(sql)}
        and (
          t.language_code = l.selected
          or not exists (
            select 1
            from entry_translations selected_translation
            where selected_translation.entry_id = e.id
              and selected_translation.language_code = l.selected
          )
        )
      order by t.language_code = l.selected desc, e.id
      limit 1
    )
    select
      ${resultHeader(sql)},
      0 as total,
      ${entryRows(sql, options)} as rows
  `
}
