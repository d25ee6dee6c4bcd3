import type { Sql } from '../../src/db/connect'

/**
 * Small named builders for test data. Each inserts what a test names and
 * returns its id; everything else gets a plain default.
 */

export async function addLanguage(sql: Sql, code: string, name = code.toUpperCase()): Promise<string> {
  await sql`insert into languages (code, name) values (${code}, ${name}) on conflict (code) do nothing`
  return code
}

export async function addContentType(sql: Sql, slug: string): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into content_types (slug, name) values (${slug}, ${slug})
    on conflict (slug) do update set name = excluded.name
    returning id
  `
  return row.id
}

export async function addAuthor(sql: Sql, name: string): Promise<number> {
  const [row] = await sql<{ id: number }[]>`insert into authors (name) values (${name}) returning id`
  return row.id
}

/** An image with the variants named (name → path); a variant left out is "not generated yet". */
export async function addImage(sql: Sql, path: string, variants: Record<string, string> = {}, alt: string | null = null): Promise<number> {
  const [row] = await sql<{ id: number }[]>`insert into media (path, alt) values (${path}, ${alt}) returning id`
  for (const [name, variantPath] of Object.entries(variants)) {
    await sql`insert into media_variants (media_id, name, path) values (${row.id}, ${name}, ${variantPath})`
  }
  return row.id
}

export async function addTerm(sql: Sql, taxonomy: string, name: string, slug = name.toLowerCase()): Promise<number> {
  const [tax] = await sql<{ id: number }[]>`
    insert into taxonomies (slug, name) values (${taxonomy}, ${taxonomy})
    on conflict (slug) do update set name = excluded.name
    returning id
  `
  const [row] = await sql<{ id: number }[]>`insert into terms (taxonomy_id, name, slug) values (${tax.id}, ${name}, ${slug}) returning id`
  return row.id
}

export interface TranslationFields {
  title?: string | null
  slug?: string | null
  excerpt?: string | null
  meta_title?: string | null
  meta_description?: string | null
  body?: string | null
}

export interface EntryFields {
  type?: string
  id?: number
  status?: 'draft' | 'scheduled' | 'published'
  publishedAt?: Date | string | null
  createdAt?: Date | string
  authorId?: number | null
  imageId?: number | null
  /** language code → fields; by default one English row titled after the slug. */
  translations?: Record<string, TranslationFields>
  /** term ids, in the order of their position */
  termIds?: number[]
}

/**
 * A content entry, published an hour ago unless told otherwise.
 * @example await addEntry(sql, { type: 'post', translations: { en: { slug: 'hello' } } })
 */
export async function addEntry(sql: Sql, fields: EntryFields = {}): Promise<number> {
  const typeId = await addContentType(sql, fields.type ?? 'post')
  const publishedAt = fields.publishedAt === undefined ? new Date(Date.now() - 3_600_000) : fields.publishedAt
  const [row] = await sql<{ id: number }[]>`
    insert into entries ${sql({
      ...(fields.id === undefined ? {} : { id: fields.id }),
      content_type_id: typeId,
      status: fields.status ?? 'published',
      published_at: publishedAt === null ? null : new Date(publishedAt),
      created_at: new Date(fields.createdAt ?? '2026-01-01T00:00:00Z'),
      author_id: fields.authorId ?? null,
      featured_image_id: fields.imageId ?? null,
    })}
    returning id
  `
  const translations = fields.translations ?? { en: { title: `Entry ${row.id}`, slug: `entry-${row.id}` } }
  for (const [language_code, t] of Object.entries(translations)) {
    await sql`
      insert into entry_translations ${sql({
        entry_id: row.id,
        language_code,
        title: t.title ?? null,
        slug: t.slug ?? null,
        excerpt: t.excerpt ?? null,
        meta_title: t.meta_title ?? null,
        meta_description: t.meta_description ?? null,
        body: t.body ?? null,
      })}
    `
  }
  for (const [position, termId] of (fields.termIds ?? []).entries()) {
    await sql`insert into entry_terms (entry_id, term_id, position) values (${row.id}, ${termId}, ${position})`
  }
  return row.id
}

/**
 * Makes `code` the default language: off, then on, in one transaction (one
 * default at every moment, languages_one_default).
 * @example await setDefaultLanguage(sql, 'fr')
 */
export async function setDefaultLanguage(sql: Sql, code: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`update languages set is_default = false`
    await tx`update languages set is_default = true where code = ${code}`
  })
}

/** Removes all content, keeping languages, types and the schema. */
export async function clearContent(sql: Sql): Promise<void> {
  await sql`truncate entries, authors, media, taxonomies restart identity cascade`
}

/** The data model's tables: what a writer writes, and what the service's triggers hear. */
export const CONTENT_TABLES = ['languages', 'content_types', 'authors', 'media', 'media_variants', 'entries', 'entry_translations', 'taxonomies', 'terms', 'entry_terms', 'custom_fields', 'field_values'] as const

/**
 * A write no trigger of the service hears (as a restore without triggers, or triggers disabled by
 * hand, would make it): the kept structures drift. Every trigger is left as it was found (an
 * `enable trigger user` would enable the replica and always triggers for ordinary writers instead).
 * @example await writeUnheard(db.sql, (tx) => tx`delete from entries`)
 */
export async function writeUnheard(sql: Sql, write: (tx: Sql) => Promise<unknown>): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    for (const table of CONTENT_TABLES) await tx.unsafe(`alter table ${table} disable trigger vitrine_replicated`)
    await write(tx as unknown as Sql)
    for (const table of CONTENT_TABLES) await tx.unsafe(`alter table ${table} enable replica trigger vitrine_replicated`)
  })
}
