import { afterAll, describe, expect, test } from 'bun:test'
import { readdir } from 'node:fs/promises'
import { migrate, MIGRATIONS_DIR } from '../src/db/migrate'
import { createTestDatabase } from './support/database'
import { runScript } from './support/service'

/** Every table and column of docs/data-model.md: [table, column, data_type, nullable, default]. */
const CONTRACT: [string, string, string, boolean, string | null][] = [
  ['languages', 'code', 'text', false, null],
  ['languages', 'name', 'text', false, null],
  ['languages', 'is_default', 'boolean', false, 'false'],
  ['content_types', 'id', 'bigint', false, 'identity'],
  ['content_types', 'slug', 'text', false, null],
  ['content_types', 'name', 'text', false, null],
  ['authors', 'id', 'bigint', false, 'identity'],
  ['authors', 'name', 'text', false, null],
  ['media', 'id', 'bigint', false, 'identity'],
  ['media', 'path', 'text', false, null],
  ['media', 'alt', 'text', true, null],
  ['media_variants', 'media_id', 'bigint', false, null],
  ['media_variants', 'name', 'text', false, null],
  ['media_variants', 'path', 'text', false, null],
  ['entries', 'id', 'bigint', false, 'identity'],
  ['entries', 'content_type_id', 'bigint', false, null],
  ['entries', 'status', 'text', false, null],
  ['entries', 'published_at', 'timestamp with time zone', true, null],
  ['entries', 'created_at', 'timestamp with time zone', false, 'now()'],
  ['entries', 'updated_at', 'timestamp with time zone', false, 'now()'],
  ['entries', 'author_id', 'bigint', true, null],
  ['entries', 'featured_image_id', 'bigint', true, null],
  ['entry_translations', 'entry_id', 'bigint', false, null],
  ['entry_translations', 'language_code', 'text', false, null],
  ['entry_translations', 'title', 'text', true, null],
  ['entry_translations', 'slug', 'text', true, null],
  ['entry_translations', 'excerpt', 'text', true, null],
  ['entry_translations', 'meta_title', 'text', true, null],
  ['entry_translations', 'meta_description', 'text', true, null],
  ['entry_translations', 'body', 'text', true, null],
  ['taxonomies', 'id', 'bigint', false, 'identity'],
  ['taxonomies', 'slug', 'text', false, null],
  ['taxonomies', 'name', 'text', false, null],
  ['terms', 'id', 'bigint', false, 'identity'],
  ['terms', 'taxonomy_id', 'bigint', false, null],
  ['terms', 'name', 'text', false, null],
  ['terms', 'slug', 'text', false, null],
  ['entry_terms', 'entry_id', 'bigint', false, null],
  ['entry_terms', 'term_id', 'bigint', false, null],
  ['entry_terms', 'position', 'integer', false, '0'],
  ['custom_fields', 'id', 'bigint', false, 'identity'],
  ['custom_fields', 'content_type_id', 'bigint', false, null],
  ['custom_fields', 'key', 'text', false, null],
  ['custom_fields', 'type', 'text', false, "'text'::text"],
  ['field_values', 'id', 'bigint', false, 'identity'],
  ['field_values', 'entry_id', 'bigint', false, null],
  ['field_values', 'custom_field_id', 'bigint', false, null],
  ['field_values', 'language_code', 'text', true, null],
  ['field_values', 'value', 'jsonb', false, null],
  // C57: the endpoints told of changes.
  ['webhooks', 'id', 'bigint', false, 'identity'],
  ['webhooks', 'url', 'text', false, null],
  ['webhooks', 'secret', 'text', true, null],
  ['webhooks', 'types', 'ARRAY', true, null],
  ['webhooks', 'debounce_ms', 'integer', false, '0'],
  ['webhooks', 'enabled', 'boolean', false, 'true'],
]

/** [table, columns of its primary key] */
const PRIMARY_KEYS: [string, string[]][] = [
  ['languages', ['code']],
  ['content_types', ['id']],
  ['webhooks', ['id']],
  ['media_variants', ['media_id', 'name']],
  ['entry_translations', ['entry_id', 'language_code']],
  ['entry_terms', ['entry_id', 'term_id']],
]

/** [table, column, referenced table, on delete] */
const FOREIGN_KEYS: [string, string, string, string][] = [
  ['media_variants', 'media_id', 'media', 'CASCADE'],
  ['entries', 'content_type_id', 'content_types', 'NO ACTION'],
  ['entries', 'author_id', 'authors', 'SET NULL'],
  ['entries', 'featured_image_id', 'media', 'SET NULL'],
  ['entry_translations', 'entry_id', 'entries', 'CASCADE'],
  ['entry_translations', 'language_code', 'languages', 'NO ACTION'],
  ['terms', 'taxonomy_id', 'taxonomies', 'CASCADE'],
  ['entry_terms', 'entry_id', 'entries', 'CASCADE'],
  ['entry_terms', 'term_id', 'terms', 'CASCADE'],
  ['custom_fields', 'content_type_id', 'content_types', 'CASCADE'],
  ['field_values', 'entry_id', 'entries', 'CASCADE'],
  ['field_values', 'custom_field_id', 'custom_fields', 'CASCADE'],
  ['field_values', 'language_code', 'languages', 'NO ACTION'],
]

const db = await createTestDatabase()
afterAll(() => db.sql.end())

async function schemaSnapshot(sql = db.sql) {
  return sql`
    select table_name, column_name, data_type, is_nullable, column_default, is_identity, identity_generation
    from information_schema.columns
    where table_schema = 'public'
    order by table_name, ordinal_position
  `
}

describe('migrations', () => {
  test('create every table and column of the data-model contract with its type, nullability and default', async () => {
    const columns = await schemaSnapshot()
    for (const [table, column, type, nullable, fallback] of CONTRACT) {
      const found = columns.find((row) => row.table_name === table && row.column_name === column)
      expect(found, `${table}.${column}`).toBeDefined()
      expect({ column: `${table}.${column}`, type: found!.data_type, nullable: found!.is_nullable === 'YES' }).toEqual({
        column: `${table}.${column}`,
        type,
        nullable,
      })
      if (fallback === 'identity') {
        expect([found!.is_identity, found!.identity_generation]).toEqual(['YES', 'BY DEFAULT'])
      } else {
        expect(found!.column_default, `default of ${table}.${column}`).toBe(fallback)
      }
    }
    const contractTables = new Set(CONTRACT.map(([table]) => table))
    const extra = columns.filter((row) => contractTables.has(row.table_name) && !CONTRACT.some(([t, c]) => t === row.table_name && c === row.column_name))
    expect(extra.filter((row) => row.is_nullable === 'NO' && row.column_default === null)).toEqual([])
  })

  test('create the primary and foreign keys of the contract', async () => {
    for (const [table, columns] of PRIMARY_KEYS) {
      const rows = await db.sql`
        select a.attname as column
        from pg_index i
        join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
        where i.indrelid = ${table}::regclass
          and i.indisprimary
        order by array_position(i.indkey, a.attnum)
      `
      expect(rows.map((row) => row.column)).toEqual(columns)
    }
    const keys = await db.sql`
      select kcu.table_name, kcu.column_name, ccu.table_name as target, rc.delete_rule
      from information_schema.referential_constraints rc
      join information_schema.key_column_usage kcu on kcu.constraint_name = rc.constraint_name
      join information_schema.constraint_column_usage ccu on ccu.constraint_name = rc.constraint_name
      where kcu.table_schema = 'public'
    `
    for (const [table, column, target, rule] of FOREIGN_KEYS) {
      expect(keys.some((k) => k.table_name === table && k.column_name === column && k.target === target && k.delete_rule === rule), `${table}.${column} → ${target}`).toBe(true)
    }
  })

  test('insert the built-in types page and post and one default language', async () => {
    const types = await db.sql`select slug from content_types order by slug`
    expect(types.map((row) => row.slug)).toEqual(['page', 'post'])
    const languages = await db.sql`select code, is_default from languages`
    expect([...languages]).toEqual([{ code: 'en', is_default: true }])
    // A second default language breaks the unique index languages_one_default.
    await expect(db.sql`insert into languages (code, name, is_default) values ('fr', 'Français', true)`).rejects.toMatchObject({
      code: '23505',
      constraint_name: 'languages_one_default',
    })
  })

  test('status accepts only draft, scheduled and published', async () => {
    await expect(db.sql`insert into entries (content_type_id, status) select id, 'archived' from content_types where slug = 'post'`).rejects.toMatchObject({
      code: '23514',
      constraint_name: 'entries_status_check',
    })
    for (const status of ['draft', 'scheduled', 'published']) {
      await db.sql`insert into entries (content_type_id, status) select id, ${status} from content_types where slug = 'post'`
    }
  })

  test('migrate a second time applies nothing and changes nothing', async () => {
    const before = await schemaSnapshot()
    expect(await migrate(db.sql)).toEqual([])
    expect(await schemaSnapshot()).toEqual(before)
    expect((await db.sql`select count(*)::int as n from schema_migrations`)[0].n).toBeGreaterThan(0)
  })

  test('two concurrent `bun run migrate` both succeed on an empty database', async () => {
    const empty = await createTestDatabase({ migrated: false })
    const runs = await Promise.all([1, 2].map(() => runScript('migrate', { DATABASE_URL: empty.url })))
    expect(runs.map((run) => [run.code, run.stderr])).toEqual([[0, ''], [0, '']])
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file.endsWith('.sql')).sort()
    expect(files.length).toBeGreaterThan(10)
    expect(runs.map((run) => run.stdout.trim()).sort()).toEqual([`Applied ${files.join(', ')}.`, 'Nothing to migrate: the schema is up to date.'])
    const applied = await empty.sql`select name from schema_migrations order by name`
    expect(applied.map((row) => row.name)).toEqual(files)
    await empty.sql.end()
  })
})
