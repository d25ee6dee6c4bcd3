import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import { runRead } from '../db/read'
import { StatementTexts } from '../db/statement-text'
import { READ_EVERY_TIME, type NextGoLives } from '../cache/next-go-lives'
import { alternatesOf, completeRow, contentTypeObject, entryModel, entryTerms, epochSeconds, goLiveIn, isLive, NO_DEADLINE, typeOfResult, type ContentTypeRow, type EntryModelRow, type EntryRow, type Languages, type RowContents } from './statement-fragments'

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
  /** C36: the types' next go-lives the change listener keeps; without it, every statement reads its type's. */
  goLives?: NextGoLives
}

/**
 * What findStatement returns: one row, the answer's header and the entry's
 * item as columns (null when no entry matched); the model and alternates as
 * JSON when asked.
 */
export interface EntryResultRow extends Row {
  type_id: number | null
  go_live_in: number | null
  selected_language: string | null
  default_language: string | null
  id: number | null
  published_at: number | null
  created_at: number
  position: string | null
  author_id: number | null
  /** Null with author_id. */
  author_name: string | null
  title: string | null
  slug: string | null
  excerpt: string | null
  meta_title: string | null
  meta_description: string | null
  image_path: string | null
  thumbnail: string | null
  medium: string | null
  terms: EntryRow['terms']
  alternates?: EntryRow['alternates']
  model?: EntryModelRow
  /** With the model: the type it shows (C25). */
  content_type?: ContentTypeRow | null
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
  const goLive = options.goLives?.before(type) ?? READ_EVERY_TIME
  const shape = `${options.model ? [...options.model].sort().join(',') : '-'} ${options.alternates ? 'alternates' : ''} ${goLive.read ? '' : 'go-live known'}`
  const statement = (db: Sql) => findTexts.run(db, shape, (value) => findStatement(db, { ...options, ...value, readGoLive: goLive.read }), { type, lang, slug })
  const [result] = await runRead(sql, statement, options.timeoutMs ?? NO_DEADLINE, { answerType: typeOfResult })
  const languages = { selected: result.selected_language, default: result.default_language }
  const row = result.id === null ? null : completeRow(entryRowOf(result, options), languages, result.content_type)
  const goLiveInSeconds = goLive.settle(result.type_id, result.go_live_in)
  return { typeExists: result.type_id !== null, typeId: result.type_id, goLiveInSeconds, languages, row }
}

/** The statement's text per shape: what the model holds, alternates (issue 45). */
const findTexts = new StatementTexts<Pick<FindOptions, 'type' | 'lang' | 'slug'>>(['type', 'lang', 'slug'])

/**
 * The statement of `findLiveEntryBySlug`, not yet sent: one row of columns,
 * read as a hand-written statement for this one answer would be (issue 45:
 * the list's fragments, a page of one, cost PostgreSQL a sixth more per
 * request in plan nodes, sorts and a second read of the translation). The
 * translation that matched the slug is the one the item shows (C14, C19).
 */
export function findStatement(sql: Sql, options: FindOptions & { readGoLive?: boolean }): PendingQuery<EntryResultRow[]> {
  const { type, lang, slug, model = null, alternates = false, readGoLive = true } = options
  const parts = new Set(model ?? [])
  return sql<EntryResultRow[]>`
    with language as (
      select
        coalesce(max(code) filter (where code = ${lang ?? null}), max(code) filter (where is_default)) as selected,
        max(code) filter (where is_default) as fallback
      from languages
    )
    select
      type_row.id as type_id,
      ${readGoLive ? goLiveIn(sql, sql`type_row.id`) : sql`null::float8`} as go_live_in,
      l.selected as selected_language,
      l.fallback as default_language,
      e.id,
      ${epochSeconds(sql, sql`e.published_at`)} as published_at,
      ${epochSeconds(sql, sql`e.created_at`)} as created_at,
      extract(epoch from e.published_at)::text as position,
      a.id as author_id,
      a.name as author_name,
      e.title,
      e.slug,
      e.excerpt,
      e.meta_title,
      e.meta_description,
      m.path as image_path,
      -- A part the model holds is not read twice: completeRow takes the item's from it (C54).
      ${parts.has('featuredImage') ? sql`null::text as thumbnail, null::text as medium` : variantPaths(sql)},
      ${parts.has('terms') ? sql`null::json` : entryTerms(sql, false)} as terms
      ${alternates ? sql`, ${alternatesOf(sql)} as alternates` : sql``}
      ${model === null ? sql`` : sql`, ${entryModel(sql, parts, { terms: entryTerms(sql, true) })} as model, ${contentTypeObject(sql, sql`type_row`)} as content_type`}
    from language l
    left join content_types type_row on type_row.slug = ${type}
    left join lateral (
      -- One range of entry_translations_language_slug for both languages; the selected
      -- language's match first, else one without a row in it (C19); the lowest id of each.
      -- Named, not e.*: a column a writer's system adds to entries must not clash with these.
      select e.id, e.published_at, e.created_at, e.updated_at, e.author_id, e.featured_image_id, t.title, t.slug, t.excerpt, t.meta_title, t.meta_description
      from entry_translations t
      join entries e on e.id = t.entry_id
      where t.slug = ${slug}
        and t.language_code in (l.selected, l.fallback)
        and e.content_type_id = type_row.id
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
    ) e on true
    left join authors a on a.id = e.author_id
    left join media m on m.id = e.featured_image_id
  `
}

/** C15: the two variants the item shows of `m`, the featured image. */
function variantPaths(sql: Sql): PendingQuery<Row[]> {
  return sql`
    (select v.path from media_variants v where v.media_id = m.id and v.name = 'thumbnail') as thumbnail,
    (select v.path from media_variants v where v.media_id = m.id and v.name = 'medium') as medium
  `
}

/** The matched entry's columns as the row every content statement returns (EntryRow). */
function entryRowOf(result: EntryResultRow, options: FindOptions): EntryRow {
  const row: EntryRow = {
    id: result.id!,
    published_at: result.published_at,
    position: result.position,
    created_at: result.created_at,
    author: result.author_id === null ? null : { id: result.author_id, name: result.author_name! },
    translation: { title: result.title, slug: result.slug, excerpt: result.excerpt, meta_title: result.meta_title, meta_description: result.meta_description },
    image: result.image_path === null ? null : { path: result.image_path, thumbnail: result.thumbnail, medium: result.medium },
    terms: result.terms ?? [],
  }
  if (options.alternates) row.alternates = result.alternates
  // C55: an entry is never found by a search, so it has nothing to highlight.
  if (options.highlights) row.highlights = null
  if (result.model !== undefined) row.model = result.model
  return row
}
