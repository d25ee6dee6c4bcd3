/**
 * The test kit for extensions, imported as `#vitrine/extension/testing`
 * (src/hooks/README.md, "Testing your extension"). It serves an item through the
 * real service: a test database of the run's PostgreSQL (test/support/preload.ts)
 * with the demo loaded, the entry you describe inserted by the fixtures' helpers,
 * and the request sent to the app in process (`app.handle`), with the service's
 * cache and change listener unless `cache: false`. What a test gets is what a
 * client would: the chain's output after C38's cache, C44's `fields`,
 * C45's `alternates` and, for an item found by a search, C55's `highlights`. It lives under test/ because it is test machinery (a
 * database per kit, fixtures); only `bun test` runs it.
 */
import { existsSync, statSync } from 'node:fs'
import { loadConfig } from '../../src/config'
import type { Sql } from '../../src/db/connect'
import { seedDemo } from '../../src/demo/seed-demo'
import { CONTENT_ITEM_HOOK, type ContentItemFilter, type FilterOptions, type ItemData } from '../../src/hooks/extension'
import { loadExtensionFiles, loadExtensions } from '../../src/hooks/loader'
import { FilterRegistry } from '../../src/hooks/registry'
import { testApp, type TestApp } from './app'
import { cachedTestApp } from './cached-app'
import { createTestDatabase, type TestDatabase } from './database'
import { addAuthor, addEntry, addImage, addLanguage, addTerm, type TranslationFields } from './fixtures'

/** An entry of the demo (`bun run seed:demo`), by its content type and a slug it has in any language. */
export interface DemoEntry {
  type: string
  slug: string
}

/**
 * An entry you describe; everything but `translations` is optional. It is
 * published an hour ago, in the kit's database, beside the demo.
 * @example { type: 'post', translations: { en: { title: 'Hello', slug: 'hello', body: '<p>Hi</p>' } }, terms: [{ taxonomy: 'tag', name: 'Bun' }], fieldValues: [{ key: 'subtitle', value: 'Hi', language: 'en' }], author: 'Ada' }
 */
export interface DescribedEntry {
  /** Default `post`; a type the demo lacks is created. */
  type?: string
  /** By language code (a language the demo lacks, en, fr and de, is added): title, slug, excerpt, meta_title, meta_description, body (HTML). */
  translations: Record<string, TranslationFields>
  /** In this order; a term the demo lacks is created (its slug defaults to the lowercased name). */
  terms?: { taxonomy: string; name: string; slug?: string }[]
  /** Custom field values; `language` left out: the value is not translated. A field the type lacks is created. */
  fieldValues?: { key: string; value: unknown; language?: string; type?: string }[]
  /** The author's name. */
  author?: string
  featuredImage?: { path: string; alt?: string; variants?: Record<string, string> }
}

export interface ItemRequest {
  /** `lang`: the language asked for; left out, the default language (en). */
  language?: string
  /** Request headers, as a client would send them (a callback reads them through `context.request.headers`). */
  headers?: Record<string, string>
  /** C44: `fields`, the item keys to keep. */
  fields?: string[]
  /** C45: `include=alternates`. */
  alternates?: boolean
  /**
   * C42/C55: the item as the list route answers this search (`search`, with `lang`), instead of the
   * single-entry route: the entry must be on the search's first page (100 items).
   */
  search?: string
  /** C55: `include=highlights`, with `search`: the item's `highlights` hold the matched words marked. */
  highlights?: boolean
}

export interface ServedItem {
  status: number
  headers: Headers
  /** The item as served: `null` when a callback returned null. */
  item: ItemData | null
}

export interface ExtensionTestKit {
  /**
   * The item the single-entry route serves for this entry.
   * @example const item = await kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { language: 'fr' })
   */
  item(entry: DemoEntry | DescribedEntry, request?: ItemRequest): Promise<ItemData | null>
  /** The same, with the status and headers (`Vary`, `X-Cache`). */
  serve(entry: DemoEntry | DescribedEntry, request?: ItemRequest): Promise<ServedItem>
  close(): Promise<void>
}

export interface ExtensionTestOptions {
  /**
   * What runs: a folder of extensions (loaded as the service loads
   * EXTENSIONS_DIR), extension files, in this order (paths from the working
   * directory), or one callback. Left out: the installed chain, the folder the
   * service would load (EXTENSIONS_DIR, by default `src/hooks/extensions/`).
   */
  extensions?: string | string[] | ContentItemFilter
  /** With one callback: its options, as `addFilter` takes them. */
  options?: number | FilterOptions
  /** The service's cache of answers (C35, C38), on by default as in the service. */
  cache?: boolean
  /** Settings, as the service reads them (`HOOK_TIMEOUT_MS`, `PUBLIC_URL`…). */
  env?: Record<string, string>
}

/**
 * A kit that serves items through the given chain. Make one per test file
 * (it creates a database and loads the demo) and close it after.
 * @example
 * const kit = await extensionTestKit({ extensions: 'src/hooks/examples/reading-time.ts' })
 * afterAll(() => kit.close())
 * test('counts words', async () => expect((await kit.item({ type: 'post', translations: { en: { slug: 'short', body: '<p>One two</p>' } } }))?.reading_minutes).toBe(1))
 */
export async function extensionTestKit(options: ExtensionTestOptions = {}): Promise<ExtensionTestKit> {
  const registry = await chainOf(options)
  const db = await createTestDatabase({ copyOf: await demoDatabase() })
  const env = { ...options.env }
  const api: TestApp & { nextChange?: (table: string) => Promise<unknown> } =
    options.cache === false ? testApp(db.url, env, registry) : await cachedTestApp(db.url, env, registry)
  let described = 0

  const serve = async (entry: DemoEntry | DescribedEntry, request: ItemRequest = {}): Promise<ServedItem> => {
    if (request.highlights && request.search === undefined) throw new TypeError('highlights needs a search: the list route adds them to the items a search finds (C55).')
    const found = 'translations' in entry ? await insertEntry(db, api, entry, ++described) : await findDemoEntry(db.sql, entry)
    const query = new URLSearchParams()
    if (request.language) query.set('lang', request.language)
    // A searched item is told apart by its id: asked for beside the fields, and left out again.
    const askedId = request.search !== undefined && request.fields !== undefined && !request.fields.includes('id')
    if (request.fields) query.set('fields', [...request.fields, ...(askedId ? ['id'] : [])].join(','))
    const include = [...(request.alternates ? ['alternates'] : []), ...(request.highlights ? ['highlights'] : [])]
    if (include.length) query.set('include', include.join(','))
    if (request.search !== undefined) query.set('search', request.search)
    if (request.search !== undefined) query.set('per_page', '100')
    const path =
      request.search === undefined
        ? `/api/v1/content/${found.type}/${encodeURIComponent(await slugToAsk(db.sql, found.id, request.language))}`
        : `/api/v1/content/${found.type}`
    const logged = api.logs.length
    const answer = await api.get(`${path}${query.size ? `?${query}` : ''}`, { headers: request.headers })
    if (answer.status !== 200) throw new Error(`The service answered ${answer.status} ${answer.text}${failureLog(api.logs.slice(logged))}`)
    if (request.search === undefined) return { status: answer.status, headers: answer.headers, item: answer.body.data }
    const items = answer.body.data as (ItemData | null)[]
    const item = items.find((candidate) => candidate?.id === found.id)
    if (!item) throw new Error(`The search ${JSON.stringify(request.search)} does not find entry ${found.id} on its first page (${items.length} items; an item a callback returns as null, or with another id, is not found either).`)
    if (askedId) delete item.id
    return { status: answer.status, headers: answer.headers, item }
  }
  return {
    serve,
    item: async (entry, request) => (await serve(entry, request)).item,
    async close() {
      await api.close()
      await db.sql.end()
    },
  }
}

let demo: Promise<string> | undefined

/** A database of this run with the demo loaded, made once: each kit gets a copy of it. */
function demoDatabase(): Promise<string> {
  demo ??= (async () => {
    // Files share it (this module is loaded once a run): kept to the run's end, not its first file's.
    const db = await createTestDatabase({ forTheRun: true })
    await seedDemo(db.sql)
    await db.sql.end()
    return db.name
  })()
  return demo
}

async function chainOf({ extensions = loadConfig(process.env).extensionsDir, options }: ExtensionTestOptions): Promise<FilterRegistry> {
  if (typeof extensions === 'function') {
    const registry = new FilterRegistry()
    registry.add(CONTENT_ITEM_HOOK, extensions, options, 'the test')
    return registry
  }
  if (typeof extensions === 'string' && existsSync(extensions) && statSync(extensions).isDirectory()) return (await loadExtensions(extensions)).registry
  return loadExtensionFiles(typeof extensions === 'string' ? [extensions] : extensions)
}

async function findDemoEntry(sql: Sql, { type, slug }: DemoEntry): Promise<{ id: number; type: string }> {
  const [row] = await sql<{ id: number }[]>`
    select e.id
    from entries e
    join content_types ct on ct.id = e.content_type_id
    join entry_translations t on t.entry_id = e.id
    where ct.slug = ${type}
      and t.slug = ${slug}
    limit 1
  `
  if (!row) throw new Error(`The demo has no ${type} with the slug ${slug}.`)
  return { id: row.id, type }
}

/** The slug the single-entry route finds the entry by in `language` (C14): its own, else the default language's. */
async function slugToAsk(sql: Sql, entryId: number, language: string | undefined): Promise<string> {
  const [row] = await sql<{ slug: string | null }[]>`
    select t.slug
    from entry_translations t
    join languages l on l.code = t.language_code
    where t.entry_id = ${entryId}
      and (t.language_code = ${language ?? null} or l.is_default)
    order by t.language_code = ${language ?? null} desc
    limit 1
  `
  if (!row?.slug) throw new Error(`Entry ${entryId} has no slug in ${language ?? 'the default language'} nor in the default language: the single-entry route cannot find it.`)
  return row.slug
}

/**
 * Inserts a described entry, in one transaction, with the fixtures' helpers; a
 * slug left out is made up. With the cache on, waits until the app has heard
 * the change, so that no answer kept before is served.
 */
async function insertEntry(db: TestDatabase, api: { nextChange?: (table: string) => Promise<unknown> }, entry: DescribedEntry, number: number): Promise<{ id: number; type: string }> {
  const type = entry.type ?? 'post'
  const translations = Object.fromEntries(Object.entries(entry.translations).map(([code, fields]) => [code, { ...fields, slug: fields.slug ?? `described-${number}-${code}` }]))
  const heard = api.nextChange?.('entries')
  const id = await db.sql.begin(async (transaction) => {
    const tx = transaction as unknown as Sql
    for (const code of Object.keys(translations)) await addLanguage(tx, code)
    for (const value of entry.fieldValues ?? []) if (value.language) await addLanguage(tx, value.language)
    const termIds: number[] = []
    for (const term of entry.terms ?? []) termIds.push(await findOrAddTerm(tx, term))
    const authorId = entry.author === undefined ? null : await addAuthor(tx, entry.author)
    const image = entry.featuredImage
    const imageId = image ? await addImage(tx, image.path, image.variants, image.alt ?? null) : null
    const id = await addEntry(tx, { type, translations, termIds, authorId, imageId })
    for (const { key, value, language, type: fieldType = 'text' } of entry.fieldValues ?? []) {
      const [field] = await tx<{ id: number }[]>`
        insert into custom_fields (content_type_id, key, type)
        select id, ${key}, ${fieldType} from content_types where slug = ${type}
        on conflict (content_type_id, key) do update set type = custom_fields.type
        returning id
      `
      await tx`insert into field_values (entry_id, custom_field_id, language_code, value) values (${id}, ${field.id}, ${language ?? null}, ${tx.json(value as never)})`
    }
    return id
  })
  await heard
  return { id, type }
}

async function findOrAddTerm(sql: Sql, { taxonomy, name, slug = name.toLowerCase() }: { taxonomy: string; name: string; slug?: string }): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    select term.id
    from terms term
    join taxonomies tx on tx.id = term.taxonomy_id
    where tx.slug = ${taxonomy}
      and term.slug = ${slug}
  `
  return row?.id ?? addTerm(sql, taxonomy, name, slug)
}

/** A 500 is a failing callback: the service's log of that request names it and says why. */
function failureLog(lines: string[]): string {
  const errors = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 'error')
  return errors.map((entry) => `\n${entry.msg}: ${entry.error?.message ?? ''}`).join('')
}
