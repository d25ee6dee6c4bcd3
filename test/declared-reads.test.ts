import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { CONTENT_ITEM_HOOK, defineExtension, itemTranslation, MODEL_PARTS, t, type ContentItemFilter, type EntryModel, type FilterOptions, type ModelPart } from '../src/hooks/extension'
import { FilterRegistry } from '../src/hooks/registry'
import { listLiveEntries } from '../src/content/list-statement'
import { findLiveEntryBySlug } from '../src/content/entry-statement'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addAuthor, addEntry, addImage, addLanguage, addTerm } from './support/fixtures'

/*
 * C54: a callback declares what of the model it reads; the statement loads
 * only what the callbacks declare, and a callback reading a part it did not
 * declare fails its request closed.
 */

const SOURCE = 'test/declared-reads.test.ts'
const db = await createTestDatabase()
const opened: TestApp[] = []
afterAll(async () => {
  for (const api of opened) await api.close()
  await db.sql.end()
})

let full: number
beforeAll(async () => {
  await addLanguage(db.sql, 'fr')
  const author = await addAuthor(db.sql, 'Ada')
  const image = await addImage(db.sql, 'uploads/cat.jpg', { thumbnail: 'uploads/cat-t.jpg', medium: 'uploads/cat-m.jpg', large: 'uploads/cat-l.jpg' }, 'A cat')
  const tag = await addTerm(db.sql, 'tag', 'Cats')
  const news = await addTerm(db.sql, 'category', 'News')
  full = await addEntry(db.sql, {
    publishedAt: new Date(Date.now() - 1000),
    authorId: author,
    imageId: image,
    termIds: [tag, news],
    translations: {
      en: { title: 'Hello', slug: 'hello', excerpt: 'Hi', meta_title: 'Hello!', body: '<p>English body</p>' },
      fr: { title: 'Bonjour', slug: 'bonjour', excerpt: 'Salut', body: '<p>Corps</p>' },
    },
  })
  await addEntry(db.sql, { publishedAt: new Date(Date.now() - 5000), translations: { fr: { title: 'Seulement', slug: 'seulement' } } })
  const [{ id: field }] = await db.sql`insert into custom_fields (content_type_id, key) select id, 'subtitle' from content_types where slug = 'post' returning id`
  await db.sql`insert into field_values (entry_id, custom_field_id, language_code, value) values (${full}, ${field}, 'en', '"A subtitle"')`
})

function apiWith(filters: [ContentItemFilter<never>, (number | FilterOptions)?][], env: Record<string, string> = {}): TestApp {
  const registry = new FilterRegistry()
  for (const [callback, options] of filters) registry.add(CONTENT_ITEM_HOOK, callback, options, SOURCE)
  const api = testApp(db.url, env, registry)
  opened.push(api)
  return api
}

/** The keys of the model a callback is handed, own ones: what it may read. */
function keysSeen(seen: EntryModel[]): string[] {
  return Object.keys(seen[0]!)
}

const ENTRY_COLUMNS = ['id', 'content_type', 'status', 'published_at', 'created_at', 'updated_at', 'author_id', 'featured_image_id']
/** The routes whose statements load models: the list, the entry, sync (C48). */
const PATHS = ['/api/v1/content/post', '/api/v1/content/post?lang=fr', '/api/v1/content/post/hello', '/api/v1/content/post/bonjour?lang=fr', '/api/v1/content/post?include=alternates', '/api/v1/sync/post', '/api/v1/sync/post?lang=fr']

describe('the statement loads what the callbacks declare (C54)', () => {
  test('reads: [] loads no relation of the model: no body, no field value, no taxonomy, no image variant beyond the two the item shows', async () => {
    const api = apiWith([[(data) => data, { reads: [] }]])
    api.statements.length = 0
    expect((await api.get('/api/v1/content/post')).status).toBe(200)
    const statement = api.statements.find((text) => text.includes('page_entries'))!
    expect(statement).toContain("'model'")
    for (const absent of ['t.body', 'field_values', 'taxonomies', "'translations'", "'variants'"]) expect(statement).not.toContain(absent)
  })

  test('each part declared loads that relation and no other', async () => {
    const loads: Record<ModelPart, string[]> = {
      translations: ["'translations'"],
      shownTranslation: ["'shown_translation'"],
      fieldValues: ['field_values'],
      featuredImage: ["'variants'"],
      terms: ['taxonomies'],
      author: [],
    }
    for (const part of MODEL_PARTS) {
      const api = apiWith([[(data) => data, { reads: [part] }]])
      api.statements.length = 0
      await api.get('/api/v1/content/post')
      const statement = api.statements.find((text) => text.includes('page_entries'))!
      for (const [other, marks] of Object.entries(loads)) {
        for (const mark of marks) expect([part, mark, statement.includes(mark)]).toEqual([part, mark, other === part])
      }
    }
  })

  test('a part the model holds is not loaded a second time for the item: the item takes its translation, image and terms from it', async () => {
    const leanMarks: [ModelPart, string][] = [
      ['translations', 't.language_code in ('],
      ['shownTranslation', "'translation', ("],
      ['featuredImage', "v.name = 'thumbnail'"],
      ['terms', "'slug', term.slug)"],
    ]
    for (const [part, mark] of leanMarks) {
      // The single entry reads no second translation whatever the model holds: the one its slug matched is the item's (C14, C19).
      for (const path of part === 'translations' || part === 'shownTranslation' ? ['/api/v1/content/post'] : ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        for (const reads of [[], [part]]) {
          const api = apiWith([[(data) => data, { reads }]])
          api.statements.length = 0
          expect((await api.get(path)).status).toBe(200)
          const statement = api.statements.find((text) => text.includes('entry_translations'))!
          expect([part, path, reads, statement.includes(mark)]).toEqual([part, path, reads, reads.length === 0])
        }
      }
    }
  })

  test('sync pages load what is declared too, and a callback reads its part there', async () => {
    const api = apiWith([[(data, content: EntryModel) => ({ ...data, subtitles: content.fieldValues.length }), { reads: ['fieldValues'], schema: { add: { subtitles: t.Integer() } } }]])
    api.statements.length = 0
    const page = await api.get('/api/v1/sync/post')
    expect([page.status, page.body.data.map((item: { subtitles: number }) => item.subtitles)]).toEqual([200, [1, 0]])
    const statement = api.statements.find((text) => text.includes('page_entries'))!
    expect([statement.includes('field_values'), statement.includes('t.body')]).toEqual([true, false])
  })

  test('the rows carry exactly the declared parts, in lists and single entries', async () => {
    const options = { type: 'post', lang: undefined, limit: 10, start: { offset: 0 } }
    const shapes: [readonly ModelPart[], string[]][] = [
      [[], []],
      [['fieldValues'], ['field_values']],
      [['translations', 'terms'], ['translations', 'terms']],
      [['author'], []],
      [['shownTranslation'], ['shown_translation']],
      [MODEL_PARTS, ['translations', 'shown_translation', 'terms', 'image', 'field_values']],
    ]
    for (const [model, relations] of shapes) {
      const page = await listLiveEntries(db.sql, { ...options, model })
      const entry = await findLiveEntryBySlug(db.sql, { type: 'post', lang: undefined, slug: 'hello', model })
      for (const row of [page.rows[0]!, entry.row!]) {
        // The content type is the statement's, read once and given to every row (issue 45).
        expect(Object.keys(row.model!)).toEqual(['updated_at', 'author_id', 'featured_image_id', ...relations, 'content_type'])
        expect(row.model!.content_type).toEqual({ id: expect.any(Number), slug: 'post', name: expect.any(String) })
      }
      // Read once for the page: one object for every row.
      expect(page.rows.length).toBeGreaterThan(1)
      expect(page.rows.every((row) => row.model!.content_type === page.rows[0]!.model!.content_type)).toBe(true)
    }
    const lean = await listLiveEntries(db.sql, options)
    expect(lean.rows[0]!.model).toBeUndefined()
  })

  test('whatever is declared, the items are the same bytes as without callbacks', async () => {
    const plain = apiWith([])
    const declarations: (readonly ModelPart[] | undefined)[] = [[], ['translations'], ['shownTranslation'], ['featuredImage'], ['terms'], ['fieldValues', 'author'], MODEL_PARTS, undefined]
    for (const reads of declarations) {
      const api = apiWith([[(data) => data, reads === undefined ? {} : { reads }]])
      for (const path of PATHS) {
        const [expected, actual] = [await plain.get(path), await api.get(path)]
        // A sync page's next URL carries the time it was read: its items are what must match.
        const shown = (response: { text: string; body: { data: unknown } }) => (path.startsWith('/api/v1/sync/') ? JSON.stringify(response.body.data) : response.text)
        expect([reads, path, actual.status, shown(actual)]).toEqual([reads, path, 200, shown(expected)])
      }
    }
  })

  test('the registry loads the union of what its callbacks declare; every part once one declares nothing; no model without callbacks', () => {
    const registry = new FilterRegistry()
    expect(registry.modelParts).toBeNull()
    registry.add(CONTENT_ITEM_HOOK, (data) => data, { reads: [] })
    expect(registry.modelParts).toEqual([])
    registry.add(CONTENT_ITEM_HOOK, (data) => data, { reads: ['terms', 'translations', 'terms'] })
    registry.add(CONTENT_ITEM_HOOK, (data) => data, { reads: ['author'] })
    expect(registry.modelParts).toEqual(['translations', 'terms', 'author'])
    registry.add(CONTENT_ITEM_HOOK, (data) => data, 20)
    expect(registry.modelParts).toEqual(MODEL_PARTS)
  })
})

describe('what a callback sees (C54, service.md §6 rule 2)', () => {
  test('a callback that declares sees the entry’s columns and its parts, loaded as the whole model would have them', async () => {
    const seen: EntryModel[] = []
    const api = apiWith([[(data, content: EntryModel) => (seen.push(content), data), { reads: ['terms', 'featuredImage', 'author'] }]])
    await api.get('/api/v1/content/post/hello')
    expect(keysSeen(seen)).toEqual([...ENTRY_COLUMNS, 'author', 'terms', 'featuredImage'])
    expect(seen[0]!.terms.map((term) => [term.name, term.taxonomy.slug])).toEqual([['Cats', 'tag'], ['News', 'category']])
    expect(seen[0]!.featuredImage!.variants.map((variant) => variant.name)).toEqual(['large', 'medium', 'thumbnail'])
    expect(seen[0]!.author).toEqual({ id: expect.any(Number), name: 'Ada' })
    expect(seen[0]!.content_type.slug).toBe('post')
  })

  test('shownTranslation is the row itemTranslation finds in translations, body included, on every route and language; the statement reads one row per entry', async () => {
    const shown: Record<string, unknown>[] = []
    const found: Record<string, unknown>[] = []
    const lean = apiWith([[(data, content: EntryModel) => (shown.push({ id: content.id, row: content.shownTranslation }), data), { reads: ['shownTranslation'] }]])
    const whole = apiWith([[(data, content: EntryModel, context) => (found.push({ id: content.id, row: itemTranslation(content, context) }), data), { reads: ['translations'] }]])
    for (const path of [...PATHS, '/api/v1/content/post?lang=de', '/api/v1/content/post/seulement?lang=fr']) {
      shown.length = 0
      found.length = 0
      expect([path, (await lean.get(path)).status, (await whole.get(path)).status]).toEqual([path, 200, 200])
      expect([path, shown]).toEqual([path, found])
      expect(shown.length).toBeGreaterThan(0)
    }
    // In French each entry shows its French row (the second has no body); in English the French-only entry shows none (C14).
    shown.length = 0
    await lean.get('/api/v1/content/post?lang=fr')
    expect(shown.map((each) => (each.row as { body: string | null } | null)?.body ?? null)).toEqual(['<p>Corps</p>', null])
    shown.length = 0
    await lean.get('/api/v1/content/post')
    expect(shown.map((each) => (each.row as { language_code: string } | null)?.language_code ?? null)).toEqual(['en', null])
  })

  test('a callback without reads gets the whole model, also beside callbacks that declare (the statement then loads it all)', async () => {
    const seen: EntryModel[] = []
    const api = apiWith([
      [(data) => data, { reads: [] }],
      [(data, content: EntryModel) => (seen.push(content), data)],
    ])
    api.statements.length = 0
    await api.get('/api/v1/content/post/hello')
    expect(keysSeen(seen)).toEqual([...ENTRY_COLUMNS, 'translations', 'shownTranslation', 'author', 'terms', 'featuredImage', 'fieldValues'])
    expect(seen[0]!.translations.map((row) => row.body)).toEqual(['<p>English body</p>', '<p>Corps</p>'])
    expect(seen[0]!.fieldValues.map((value) => value.value)).toEqual(['A subtitle'])
    expect(api.statements.find((text) => text.includes('entry_translations'))).toContain('t.body')
  })

  test('a cached answer hands each callback its own view again, on every hit', async () => {
    const registry = new FilterRegistry()
    registry.add(CONTENT_ITEM_HOOK, (data, content) => ({ ...data, field_count: content.fieldValues.length }), { reads: ['fieldValues'], schema: { add: { field_count: t.Integer() } } }, SOURCE)
    registry.add(CONTENT_ITEM_HOOK, function peeking(data, content: EntryModel, context) {
      return context.request.headers.has('x-peek') ? { ...data, field_count: content.fieldValues.length } : data
    }, { reads: ['terms'] }, SOURCE)
    const api = await cachedTestApp(db.url, {}, registry)
    try {
      for (let round = 0; round < 2; round++) {
        const answer = await api.get('/api/v1/content/post/hello')
        expect([answer.status, answer.body.data.field_count]).toEqual([200, 1])
        expect((await api.get('/api/v1/content/post/hello', { headers: { 'x-peek': '1' } })).status).toBe(500)
      }
    } finally {
      await api.close()
    }
  })
})

describe('reading a part not declared fails closed (C54, C23)', () => {
  test('500 without the unfiltered item; the log names the callback by file and name, and the part', async () => {
    const api = apiWith([[function tagsOnly(data, content: EntryModel) { return { ...data, subtitle_count: content.fieldValues.length } }, { reads: ['terms'], schema: { add: { subtitle_count: t.Integer() } } }]])
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
      const response = await api.get(path)
      expect([response.status, response.text]).toEqual([500, '{"error":"Internal server error."}'])
    }
    const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
    expect(errors[0].error.message).toContain(`${SOURCE}:tagsOnly read content.fieldValues, which its reads do not declare (reads: ['terms'])`)
  })

  test('even when another callback declared that part and the statement loaded it: each callback reads only what it declared', async () => {
    const api = apiWith([
      [(data, content: EntryModel) => ({ ...data, subtitles: content.fieldValues.length }), { reads: ['fieldValues'], schema: { add: { subtitles: t.Integer() } } }],
      [(data, content: EntryModel) => ({ ...data, bodies: content.translations.length }), { reads: [], schema: { add: { bodies: t.Integer() } } }],
    ])
    const response = await api.get('/api/v1/content/post/hello')
    expect(response.status).toBe(500)
    const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
    expect(errors[0].error.message).toMatch(/#2 of test\/declared-reads.test.ts broke its declaration: test\/declared-reads.test.ts:#2 read content.translations/)
  })

  test('an async callback too, and with HOOK_SCHEMA_MISMATCH=log: there is no output to serve', async () => {
    const api = apiWith([[async (data, content: EntryModel) => ({ ...data, n: content.author?.id ?? 0 }), { reads: [], schema: { add: { n: t.Integer() } } }]], { HOOK_SCHEMA_MISMATCH: 'log' })
    expect((await api.get('/api/v1/content/post/hello')).status).toBe(500)
    const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
    expect(errors[0].error.message).toContain('read content.author')
  })

  test('an undeclared part is not among the model’s own keys: spreading it leaves it out', async () => {
    const seen: EntryModel[] = []
    const api = apiWith([[(data, content: EntryModel) => (seen.push({ ...content }), data), { reads: [] }]])
    await api.get('/api/v1/content/post/hello')
    expect(keysSeen(seen)).toEqual(ENTRY_COLUMNS)
  })
})

describe('registration checks reads (C54)', () => {
  const registry = new FilterRegistry()
  const cases: [string, unknown, RegExp][] = [
    ['an unknown part', ['body'], /reads names an unknown part of the model: body\. The parts are translations, shownTranslation, fieldValues, featuredImage, terms, author\./],
    ['a string', 'terms', /reads must be an array of parts of the model/],
    ['null', null, /reads must be an array of parts of the model/],
  ]
  for (const [what, reads, message] of cases) {
    test(`${what}: a TypeError at registration`, () => {
      expect(() => registry.add(CONTENT_ITEM_HOOK, (data) => data, { reads } as never)).toThrow(message)
    })
  }
})

describe('#vitrine/extension types content by reads (checked by tsc --noEmit -p .)', () => {
  test('reads: [\'fieldValues\'] gives content.fieldValues and no content.terms; reads: [] none of the parts; no reads, all of them', async () => {
    const extension = defineExtension(({ addFilter }) => {
      addFilter(CONTENT_ITEM_HOOK, (data, content) => ({ ...data, values: content.fieldValues.length, type: content.content_type.slug }), { reads: ['fieldValues'], schema: { add: { values: t.Integer(), type: t.String() } } })
      // @ts-expect-error terms is not among the declared reads
      addFilter(CONTENT_ITEM_HOOK, (data, content) => ({ ...data, terms: content.terms }), { reads: ['fieldValues'] })
      // @ts-expect-error reads: [] declares no part
      addFilter(CONTENT_ITEM_HOOK, (data, content) => ({ ...data, title: content.translations[0]?.title ?? null }), { reads: [] })
      addFilter(CONTENT_ITEM_HOOK, (data, content) => ({ ...data, title: content.translations[0]?.title ?? null, values: content.fieldValues.length, type: content.content_type.slug }), 20)
    })
    const registry = new FilterRegistry()
    await extension(registry.apiFor(SOURCE))
    expect(registry.filters.map((filter) => filter.reads)).toEqual([['fieldValues'], ['fieldValues'], [], null])
    // @ts-expect-error an unknown part (and at run time a TypeError: see above)
    expect(() => registry.add(CONTENT_ITEM_HOOK, (data) => data, { reads: ['body'] })).toThrow(TypeError)
  })
})
