import type { PendingQuery, Row } from 'postgres'
import type { Sql } from '../db/connect'
import type { FieldValueModel, ModelPart, TermModel, TranslationModel } from '../hooks/extension'

/*
 * The fragments every statement of the content API shares (the list, the
 * entry, sync, discovery, the event stream): the live condition (C1), the
 * type and language in effect, the result's header, and each entry's item
 * JSON with the row types the statements return. Statements compose them as
 * nested `sql` fragments; none of them is sent alone.
 */

/** setTimeout's longest delay: no deadline to speak of. */
export const NO_DEADLINE = 2 ** 31 - 1

/** Above every id: a place after which every entry of its time comes. */
export const MAX_ID = '9223372036854775807'

/** One entry as the statements below return it, before mapping (see map-item.ts). */
export interface EntryRow {
  id: number
  /** Unix seconds, whole. */
  published_at: number | null
  /** The exact publication time, in Unix seconds as PostgreSQL writes them (`1700000000.123456`, `-Infinity`): where a cursor continues (C39). */
  position: string | null
  created_at: number
  author: { id: number; name: string } | null
  /** The selected language's translation, else the default language's (C14). Absent from a row whose model holds the translations or the shown translation until completeRow; so are `image` and `terms`. */
  translation: { title: string | null; slug: string | null; excerpt: string | null; meta_title: string | null; meta_description: string | null } | null
  image: { path: string; thumbnail: string | null; medium: string | null } | null
  terms: { id: number; name: string; slug: string }[]
  /** Only when the statement was asked for them (C45): each translation with a slug, by language code. */
  alternates?: { language: string; slug: string }[]
  /** Only when the statement was asked for them (C55): the shown translation's title and excerpt, escaped and marked; null without a search. */
  highlights?: { title: string | null; excerpt: string | null } | null
  /** Only when the statement was asked for models (see hooks/model.ts). */
  model?: EntryModelRow
  /** Search results by relevance only (C42): the rank, as PostgreSQL wrote the `real`; a cursor continues after it. */
  rank?: string
}

/** What the filter hook's model is built from: the relations of C25, those the statement was asked for (C54). */
export interface EntryModelRow {
  /** The statement's type, read once for the page and shared by its rows (completeRow). */
  content_type: ContentTypeRow
  updated_at: number
  author_id: number | null
  featured_image_id: number | null
  translations?: TranslationModel[]
  /** The translation the item shows (C14), body included; null when the entry has neither language's. */
  shown_translation?: TranslationModel | null
  terms?: TermModel[]
  image?: { id: number; path: string; alt: string | null; variants: { name: string; path: string }[] } | null
  field_values?: FieldValueModel[]
}

/** A content type as the model shows it (C25). */
export interface ContentTypeRow {
  id: number
  slug: string
  name: string
}

export interface Languages {
  /** The language in effect: the requested one when configured, else the default (C9). */
  selected: string | null
  default: string | null
}

/** What each row holds beyond the lean item: the entry's model (C25), its alternates (C45), its highlights (C55). */
export interface RowContents {
  /**
   * Also load each entry's model for the filter hook (C25) with these of its
   * parts (C54: what the callbacks declare they read; FilterRegistry.modelParts);
   * `[]`: the entry's own columns and content type only. Absent or null: no model.
   */
  model?: readonly ModelPart[] | null
  /** Also load each entry's alternates (C45); without them, the statement is the same as before they existed. */
  alternates?: boolean
  /** Also give each row `highlights` (C55): null, unless the statement searches and passes them to entryRows. */
  highlights?: boolean
}

export interface ResultRow extends Row {
  type_exists: boolean
  type_id: number | null
  go_live_in: number | null
  selected_language: string | null
  default_language: string | null
  /** With a model (resultHeader's `contentType`): the type the model shows, once for every row; null when the type does not exist. */
  content_type?: ContentTypeRow | null
  total: number
  /** Lists only. */
  has_more?: boolean
  rows: EntryRow[]
}

export function headerOf(result: ResultRow): { typeExists: boolean; typeId: number | null; goLiveInSeconds: number | null } {
  return { typeExists: result.type_exists, typeId: result.type_id, goLiveInSeconds: result.go_live_in }
}

/** C50: the content type a list or entry answer is read for (null: the type does not exist). */
export function typeOfResult(rows: readonly { type_id: number | null }[]): number | null {
  return rows[0]?.type_id ?? null
}

export function languagesOf(result: ResultRow): Languages {
  return { selected: result.selected_language, default: result.default_language }
}

/** C1: published, and its publication time (if any) has come. */
export function isLive(sql: Sql): PendingQuery<Row[]> {
  return sql`e.status = 'published' and (e.published_at is null or e.published_at <= now())`
}

/** C1's dated live entries of the type: one range of entries_published_list, from now() down. */
export function isDatedLive(sql: Sql): PendingQuery<Row[]> {
  return sql`e.content_type_id = (select id from content_type) and e.status = 'published' and e.published_at <= now()`
}

/** C1's undated live entries of the type: the range after the dated ones. */
export function isUndatedLive(sql: Sql): PendingQuery<Row[]> {
  return sql`e.content_type_id = (select id from content_type) and e.status = 'published' and e.published_at is null`
}

export function commonTables(sql: Sql, type: string, lang: string | undefined): PendingQuery<Row[]> {
  return sql`
    content_type as (
      select id, slug, name
      from content_types
      where slug = ${type}
    ),
    language as (
      select
        coalesce(max(code) filter (where code = ${lang ?? null}), max(code) filter (where is_default)) as selected,
        max(code) filter (where is_default) as fallback
      from languages
    )
  `
}

/**
 * `readGoLive` false: the process knows the type's next go-live (src/cache/next-go-lives.ts), go_live_in is null.
 * `contentType`: the rows carry models, whose `content_type` is read here once for the page, not once per row (C54, issue 45).
 */
export function resultHeader(sql: Sql, readGoLive = true, contentType = false): PendingQuery<Row[]> {
  return sql`
    exists (select 1 from content_type) as type_exists,
    (select id from content_type) as type_id,
    ${readGoLive ? goLiveIn(sql, sql`(select id from content_type)`) : sql`null::float8`} as go_live_in,
    (select selected from language) as selected_language,
    (select fallback from language) as default_language
    ${contentType ? sql`, (select ${contentTypeObject(sql, sql`content_type`)} from content_type) as content_type` : sql``}
  `
}

/** The model's `content_type` (C25) of the row `alias` of content_types, as JSON. */
export function contentTypeObject(sql: Sql, alias: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`json_build_object('id', ${alias}.id, 'slug', ${alias}.slug, 'name', ${alias}.name)`
}

/** C36: seconds until the type's next go-live (an embargoed entry's `published_at`), null when none is due. */
export function goLiveIn(sql: Sql, typeId: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`
    (
      select extract(epoch from min(e.published_at) - now())::float8
      from entries e
      where e.content_type_id = ${typeId}
        and e.status = 'published'
        and e.published_at > now()
        -- 'infinity' never comes (and PostgreSQL 15 cannot subtract it: a 500).
        and e.published_at < 'infinity'
    )
  `
}

/**
 * The entries of `page_entries` as a JSON array of EntryRow, in list order:
 * lean (the item's own translation, image variants and terms), or with each
 * entry's model (C25) holding the parts asked for (C54); a part the model
 * holds is not loaded twice: completeRow takes the item's translation, image
 * or terms from it. With their alternates (C45) and highlights (C55:
 * `highlightsOf`, null by default) when asked, from the same statement. Every relation
 * but the terms is a subquery per entry: an index lookup whatever the planner
 * guesses of the page's size (the statement keeps one generic plan, see
 * connect.ts); the terms come from one join for the whole page (pageTerms).
 */
export function entryRows(
  sql: Sql,
  { model = null, alternates = false, highlights = false }: RowContents,
  order: PendingQuery<Row[]> = listOrder(sql),
  extra: PendingQuery<Row[]> = sql``,
  highlightsOf: PendingQuery<Row[]> = sql`null`,
): PendingQuery<Row[]> {
  const parts = new Set(model ?? [])
  return sql`
    (
      with ${pageTerms(sql, parts.has('terms'))}
      select coalesce(
        json_agg(
          json_build_object(
            'id', e.id,
            'published_at', ${epochSeconds(sql, sql`e.published_at`)},
            'created_at', ${epochSeconds(sql, sql`e.created_at`)},
            'position', extract(epoch from e.published_at)::text,
            'author', (
              select json_build_object('id', a.id, 'name', a.name)
              from authors a
              where a.id = e.author_id
            ),
            ${extra}
            ${alternates ? sql`'alternates', ${alternatesOf(sql)},` : sql``}
            ${highlights ? sql`'highlights', ${highlightsOf},` : sql``}
            ${joinFields(sql, [...itemFields(sql, parts), ...(model === null ? [] : [sql`'model', ${entryModel(sql, parts)}`])])}
          )
          order by ${order}
        ),
        '[]'::json
      )
      from page_entries e
    )
  `
}

/**
 * A timestamp as whole Unix seconds (C13 formats it). RFC 3339 has room for
 * years 0001 to 9999 only: values outside, ±infinity included, are clamped
 * to that range rather than failing the whole page.
 */
export function epochSeconds(sql: Sql, column: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`
    case when ${column} is not null then
      floor(extract(epoch from least(greatest(${column}, '0001-01-01 00:00:00+00'::timestamptz), '9999-12-31 23:59:59+00'::timestamptz)))::bigint
    end
  `
}

/** C11: the list order, stable across pages; `e` is in scope. */
export function listOrder(sql: Sql): PendingQuery<Row[]> {
  return sql`e.published_at desc nulls last, e.id desc`
}

/**
 * The terms of the page's entries, in one join for the whole page (C16): a
 * join per entry made the planner hash the whole terms table once per entry.
 * Lean: id, name and slug; for models holding their terms (C25, C54): also
 * the position and taxonomy.
 */
function pageTerms(sql: Sql, forModel: boolean): PendingQuery<Row[]> {
  return sql`
    page_terms as materialized (
      select et.entry_id, ${termsAggregate(sql, forModel)} as terms
      from page_entries pe
      join entry_terms et on et.entry_id = pe.id
      ${termsJoin(sql, forModel)}
      group by et.entry_id
    )
  `
}

/**
 * One entry's terms (C16), lean or for its model, as one subquery: what a
 * statement of one entry reads instead of page_terms; `e` is in scope.
 */
export function entryTerms(sql: Sql, forModel: boolean): PendingQuery<Row[]> {
  return sql`
    coalesce((
      select ${termsAggregate(sql, forModel)}
      from entry_terms et
      ${termsJoin(sql, forModel)}
      where et.entry_id = e.id
    ), '[]'::json)
  `
}

/** The terms of `et` (entry_terms) joined by termsJoin, as a JSON array in C16's order. */
function termsAggregate(sql: Sql, forModel: boolean): PendingQuery<Row[]> {
  const term = forModel
    ? sql`json_build_object('id', term.id, 'name', term.name, 'slug', term.slug, 'position', et.position, 'taxonomy', json_build_object('id', tx.id, 'slug', tx.slug, 'name', tx.name))`
    : sql`json_build_object('id', term.id, 'name', term.name, 'slug', term.slug)`
  return sql`json_agg(${term} order by et.position, term.id)`
}

function termsJoin(sql: Sql, forModel: boolean): PendingQuery<Row[]> {
  return sql`
    join terms term on term.id = et.term_id
    ${forModel ? sql`join taxonomies tx on tx.id = term.taxonomy_id` : sql``}
  `
}

/** An entry's terms from page_terms; `e` is in scope. */
function termsOf(sql: Sql): PendingQuery<Row[]> {
  return sql`coalesce((select pt.terms from page_terms pt where pt.entry_id = e.id), '[]'::json)`
}

/**
 * C45: one `{ language, slug }` per translation of the entry that has a slug,
 * the selected language's included, by language code in byte order (the same
 * whatever the database's collation: `pt-BR` before `pt-br`); `e` is in
 * scope, and is live: page_entries holds nothing else (C2). One index range
 * of entry_translations' primary key per entry.
 */
export function alternatesOf(sql: Sql): PendingQuery<Row[]> {
  return sql`
    (
      select coalesce(json_agg(json_build_object('language', t.language_code, 'slug', t.slug) order by t.language_code collate "C"), '[]'::json)
      from entry_translations t
      where t.entry_id = e.id
        and t.slug is not null
    )
  `
}

/**
 * The translation an entry's item shows (C14), as a JSON object of `fields`
 * (key-value pairs over `t`): the selected language's row, else the fallback
 * (default) language's, else null. `e` and the statement's `language` are in
 * scope. The item's translated fields and the model's `shownTranslation` (C54)
 * both come from here, so they are always the same row.
 */
function shownTranslationOf(sql: Sql, fields: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return sql`(
      select json_build_object(${fields})
      from entry_translations t
      where t.entry_id = e.id
        and t.language_code in ((select selected from language), (select fallback from language))
      order by t.language_code = (select selected from language) desc
      limit 1
    )`
}

/**
 * The lean row's translation (C14), image with two variants (C15) and terms
 * (C16), as key-value pairs of json_build_object, each unless the model's
 * parts hold it; `e` is in scope.
 */
function itemFields(sql: Sql, modelParts: ReadonlySet<ModelPart>): PendingQuery<Row[]>[] {
  const translation = sql`
    'translation', ${shownTranslationOf(sql, sql`'title', t.title, 'slug', t.slug, 'excerpt', t.excerpt, 'meta_title', t.meta_title, 'meta_description', t.meta_description`)}
  `
  const image = sql`
    'image', (
      select json_build_object(
        'path', m.path,
        'thumbnail', (select v.path from media_variants v where v.media_id = m.id and v.name = 'thumbnail'),
        'medium', (select v.path from media_variants v where v.media_id = m.id and v.name = 'medium')
      )
      from media m
      where m.id = e.featured_image_id
    )
  `
  return [
    modelParts.has('translations') || modelParts.has('shownTranslation') ? null : translation,
    modelParts.has('featuredImage') ? null : image,
    modelParts.has('terms') ? null : sql`'terms', ${termsOf(sql)}`,
  ].filter((field) => field !== null)
}

/** Key-value pairs of json_build_object, comma-separated. */
function joinFields(sql: Sql, fields: PendingQuery<Row[]>[]): PendingQuery<Row[]> {
  return fields.reduce((joined, field, index) => (index === 0 ? field : sql`${joined}, ${field}`), sql``)
}

/**
 * A row loaded with its model takes the item's translation (C14: the selected
 * language's row, else the default language's, per entry), image variants and
 * terms from the model's parts that hold them; the others came lean. Its
 * model is given the statement's `contentType`, one object for every row.
 */
export function completeRow(row: EntryRow, languages: Languages, contentType: ContentTypeRow | null | undefined): EntryRow {
  const model = row.model
  if (!model) return row
  // A statement that loads models reads their type in its header: one that does not is a bug here.
  if (!contentType) throw new Error('The statement loaded models without their content type (resultHeader\'s contentType).')
  // The model was parsed for this row alone: it is completed in place.
  model.content_type = contentType
  const complete = { ...row }
  const { translations, shown_translation, image, terms } = model
  if (translations || shown_translation !== undefined) {
    const translation =
      shown_translation !== undefined ? shown_translation : (translations!.find((t) => t.language_code === languages.selected) ?? translations!.find((t) => t.language_code === languages.default))
    complete.translation = translation
      ? { title: translation.title, slug: translation.slug, excerpt: translation.excerpt, meta_title: translation.meta_title, meta_description: translation.meta_description }
      : null
  }
  if (image !== undefined) {
    const variant = (name: string) => image?.variants.find((v) => v.name === name)?.path ?? null
    complete.image = image ? { path: image.path, thumbnail: variant('thumbnail'), medium: variant('medium') } : null
  }
  if (terms) complete.terms = terms.map((term) => ({ id: term.id, name: term.name, slug: term.slug }))
  return complete
}

/**
 * An entry's relations for the filter hook (C25), as EntryModelRow: its own
 * columns always, each relation when `parts` has it (C54); `e` is in scope.
 * The author is the row's own (the item shows it); the content type the
 * statement's, read once (resultHeader's `contentType`, completeRow).
 */
export function entryModel(sql: Sql, parts: ReadonlySet<ModelPart>, { terms = termsOf(sql) }: { terms?: PendingQuery<Row[]> } = {}): PendingQuery<Row[]> {
  const translations = sql`
      'translations', (
        select coalesce(
          json_agg(
            json_build_object(
              'language_code', t.language_code,
              'title', t.title,
              'slug', t.slug,
              'excerpt', t.excerpt,
              'meta_title', t.meta_title,
              'meta_description', t.meta_description,
              'body', t.body
            )
            order by t.language_code
          ),
          '[]'::json
        )
        from entry_translations t
        where t.entry_id = e.id
      )
  `
  // The row the item shows (C14), the lean translation's, with its language and body.
  const shownTranslation = sql`
      'shown_translation', ${shownTranslationOf(
        sql,
        sql`'language_code', t.language_code, 'title', t.title, 'slug', t.slug, 'excerpt', t.excerpt, 'meta_title', t.meta_title, 'meta_description', t.meta_description, 'body', t.body`,
      )}
  `
  const image = sql`
      'image', (
        select json_build_object(
          'id', m.id,
          'path', m.path,
          'alt', m.alt,
          'variants', (
            select coalesce(json_agg(json_build_object('name', v.name, 'path', v.path) order by v.name), '[]'::json)
            from media_variants v
            where v.media_id = m.id
          )
        )
        from media m
        where m.id = e.featured_image_id
      )
  `
  const fieldValues = sql`
      'field_values', (
        select coalesce(
          json_agg(
            json_build_object(
              'id', fv.id,
              'custom_field_id', fv.custom_field_id,
              'key', cf.key,
              'type', cf.type,
              'language_code', fv.language_code,
              'value', fv.value
            )
            order by cf.key, fv.language_code nulls first, fv.id
          ),
          '[]'::json
        )
        from field_values fv
        join custom_fields cf on cf.id = fv.custom_field_id
        where fv.entry_id = e.id
      )
  `
  const own = sql`
      'updated_at', ${epochSeconds(sql, sql`e.updated_at`)},
      'author_id', e.author_id,
      'featured_image_id', e.featured_image_id
  `
  const relations = [
    parts.has('translations') ? translations : null,
    parts.has('shownTranslation') ? shownTranslation : null,
    parts.has('terms') ? sql`'terms', ${terms}` : null,
    parts.has('featuredImage') ? image : null,
    parts.has('fieldValues') ? fieldValues : null,
  ].filter((relation) => relation !== null)
  return sql`json_build_object(${joinFields(sql, [own, ...relations])})`
}
