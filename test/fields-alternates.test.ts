import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { defineExtension, itemTranslation, t } from '../src/hooks/extension'
import { testApp, type TestApp } from './support/app'
import { cachedTestApp, type CachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addAuthor, addEntry, addImage, addLanguage, addTerm, clearContent, type TranslationFields } from './support/fixtures'
import { links } from './support/links'
import { registryOf } from './support/openapi'
import { random } from './support/random'

/**
 * C44 `fields` and C45 `include=alternates`, on both content routes, with and
 * without an extension that adds keys, with and without the cache.
 */
const db = await createTestDatabase()
// `pt-BR` and `pt-br` are two codes: alternates come by code in byte order, whatever the database's collation.
const LANGUAGES = ['en', 'fr', 'de', 'pt-BR', 'pt-br']
for (const code of LANGUAGES.slice(1)) await addLanguage(db.sql, code)

/**
 * Adds two declared keys, built in the other order than declared (the item's
 * usual order is the chain's), one from what the callback sees of
 * `alternates`; withholds every entry whose id is a multiple of 7.
 */
const counting = defineExtension(({ addFilter }) => {
  addFilter(
    'service/api/content-item',
    (data, content, context) => {
      if (data.id! % 7 === 0) return null
      const words = itemTranslation(content, context)?.body?.split(/\s+/).filter(Boolean).length ?? 0
      return { alternate_count: data.alternates?.length ?? null, ...data, word_count: words }
    },
    { schema: { add: { word_count: t.Integer(), alternate_count: t.Union([t.Integer(), t.Null()]) } } },
  )
})

const plain = testApp(db.url)
const extended = testApp(db.url, {}, await registryOf(counting))
const cached = await cachedTestApp(db.url)
const cachedExtended = await cachedTestApp(db.url, {}, await registryOf(counting))
afterAll(async () => {
  for (const api of [plain, extended, cached, cachedExtended]) await api.close()
  await db.sql.end()
})
beforeEach(async () => {
  const cleared = [cached.nextChange('entries'), cachedExtended.nextChange('entries')]
  await clearContent(db.sql)
  await Promise.all(cleared)
})

const C12_KEYS = ['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'excerpt', 'meta_title', 'meta_description', 'featured_image', 'terms']
const EXTENSION_KEYS = ['word_count', 'alternate_count']
const HOUR = 3_600_000
const BASE = 'https://cms.example.com'

/** Byte order, as PostgreSQL's "C" collation (and JavaScript's sort, for ASCII codes). */
const byCode = (a: { language: string }, b: { language: string }) => (a.language < b.language ? -1 : a.language > b.language ? 1 : 0)

/** `item` with only the keys in `keys`, in the item's own order. */
function restrict(item: Record<string, unknown> | null, keys: Set<string>): Record<string, unknown> | null {
  return item === null ? null : Object.fromEntries(Object.entries(item).filter(([key]) => keys.has(key)))
}

/** Waits until the cached apps heard every write committed so far. */
async function settled() {
  const barriers = [cached.nextChange('test_barrier'), cachedExtended.nextChange('test_barrier')]
  await db.sql`select pg_notify('vitrine_changes', 'test_barrier:*')`
  await Promise.all(barriers)
}

/** A small multilingual site: one entry in three languages (one without a slug), one in English only, a draft sharing a slug. */
async function smallSite() {
  const author = await addAuthor(db.sql, 'Ada')
  const image = await addImage(db.sql, 'uploads/cat.jpg')
  const tag = await addTerm(db.sql, 'tag', 'Cats')
  const hello = await addEntry(db.sql, {
    publishedAt: new Date(Date.now() - HOUR),
    authorId: author,
    imageId: image,
    termIds: [tag],
    translations: {
      en: { title: 'Hello', slug: 'hello', body: 'one two three' },
      fr: { title: 'Bonjour', slug: 'bonjour', body: 'un deux' },
      de: { title: 'Hallo', slug: null },
      'pt-br': { title: 'Olá', slug: 'ola' },
      'pt-BR': { title: 'Olá', slug: 'ola-br' },
    },
  })
  const english = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 2 * HOUR), translations: { en: { title: 'Only English', slug: 'only-english' } } })
  const draft = await addEntry(db.sql, { status: 'draft', translations: { en: { slug: 'secret' }, fr: { slug: 'bonjour' }, de: { slug: 'geheim' } } })
  return { hello, english, draft }
}

const HELLO_ALTERNATES = [
  { language: 'en', slug: 'hello' },
  { language: 'fr', slug: 'bonjour' },
  { language: 'pt-BR', slug: 'ola-br' },
  { language: 'pt-br', slug: 'ola' },
]

describe('C45: include=alternates', () => {
  test('adds alternates after terms on both routes: one per translation with a slug, by language code, the selected one included', async () => {
    const { hello, english } = await smallSite()
    for (const lang of ['', '&lang=fr', '&lang=de', '&lang=pt-br', '&lang=xx']) {
      const list = await plain.get(`/api/v1/content/post?include=alternates${lang}`)
      expect(list.status).toBe(200)
      expect(list.body.data.map((item: any) => [item.id, item.alternates])).toEqual([
        [hello, HELLO_ALTERNATES],
        [english, [{ language: 'en', slug: 'only-english' }]],
      ])
      for (const item of list.body.data) expect(Object.keys(item)).toEqual([...C12_KEYS, 'alternates'])
    }
    const show = await plain.get('/api/v1/content/post/bonjour?lang=fr&include=alternates')
    expect([show.body.data.id, show.body.data.title, show.body.data.alternates]).toEqual([hello, 'Bonjour', HELLO_ALTERNATES])
    expect(Object.keys(show.body.data)).toEqual([...C12_KEYS, 'alternates'])
  })

  test('without it, items are exactly C12 and the statement holds no alternates; with it, the same one statement holds them', async () => {
    await smallSite()
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
      plain.statements.length = 0
      const response = await plain.get(path)
      for (const item of [response.body.data].flat()) expect(Object.keys(item)).toEqual(C12_KEYS)
      expect(plain.statements).toHaveLength(1)
      // The list builds each item as JSON, the single entry returns columns.
      expect(plain.statements[0]).not.toMatch(/'alternates'|as alternates/)
      plain.statements.length = 0
      await plain.get(`${path}?include=alternates`)
      expect(plain.statements).toHaveLength(1)
      expect(plain.statements[0]).toMatch(/'alternates'|as alternates/)
    }
  })

  test('C2: a hidden entry shows nothing, not through alternates either; a live entry shows all its translations', async () => {
    const { draft } = await smallSite()
    const list = await plain.get('/api/v1/content/post?include=alternates&per_page=100')
    expect(list.body.data.map((item: any) => item.id)).not.toContain(draft)
    expect(list.text).not.toContain('secret')
    expect(list.text).not.toContain('geheim')
    expect((await plain.get('/api/v1/content/post/geheim?lang=de&include=alternates')).status).toBe(404)
  })

  test('callbacks see alternates (C25): an extension counts them', async () => {
    const { hello } = await smallSite()
    const withAlternates = await extended.get('/api/v1/content/post/hello?include=alternates')
    expect(withAlternates.body.data).toMatchObject({ id: hello, alternate_count: 4, word_count: 3, alternates: HELLO_ALTERNATES })
    expect(Object.keys(withAlternates.body.data)).toEqual([...C12_KEYS, 'alternates', 'alternate_count', 'word_count'])
    expect((await extended.get('/api/v1/content/post/hello')).body.data.alternate_count).toBeNull()
  })

  test('C45/C55: any other include value is a 400, both routes, before any statement', async () => {
    await smallSite()
    for (const value of ['', 'Alternates', 'alternates,', ',highlights', 'alternates,highlight', 'terms', 'count.posts', '%20alternates', 'highlights%20']) {
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        plain.statements.length = 0
        const response = await plain.get(`${path}?include=${value}`)
        expect([path, value, response.status, response.body]).toEqual([path, value, 400, { error: 'The include parameter must be a comma-separated list of: alternates, highlights.' }])
        expect(plain.statements).toEqual([])
      }
    }
  })

  test('C19/C45 property: on random multilingual sites every alternate resolves through the single-entry route with its lang to the same entry', async () => {
    const rng = random(45)
    let resolved = 0
    for (let site = 0; site < 3; site++) {
      await clearContent(db.sql)
      const pool = ['home', 'about', 'café', 'über-uns', 'news', 'a b', 'x%y', '日本']
      const used = new Map<string, Set<string>>()
      const made: { id: number; type: string; live: boolean; alternates: { language: string; slug: string }[] }[] = []
      for (let i = 0; i < 36; i++) {
        const type = rng.pick(['post', 'page'])
        const kind = rng.pick(['live', 'live', 'live', 'undated', 'draft', 'embargoed'] as const)
        const live = kind === 'live' || kind === 'undated'
        const translations: Record<string, TranslationFields> = {}
        for (const code of LANGUAGES) {
          if (rng.next() < (code === 'en' ? 0.3 : 0.5)) continue
          let slug: string | null = null
          if (rng.next() < 0.85) {
            // Slugs unique per type and language among live entries (C45's premise); hidden entries may take any.
            const taken = used.get(`${type} ${code}`) ?? new Set<string>()
            used.set(`${type} ${code}`, taken)
            slug = rng.pick(pool)
            if (live && taken.has(slug)) slug = `${slug}-${i}`
            if (live) taken.add(slug)
          }
          translations[code] = { title: `${i} ${code}`, slug }
        }
        const publishedAt = kind === 'undated' ? null : kind === 'embargoed' ? new Date(Date.now() + 48 * HOUR) : new Date(Date.now() - (1 + i) * HOUR)
        const id = await addEntry(db.sql, { type, status: kind === 'draft' ? 'draft' : 'published', publishedAt, translations })
        const alternates = Object.entries(translations)
          .filter(([, fields]) => fields.slug !== null)
          .map(([language, fields]) => ({ language, slug: fields.slug! }))
          .sort(byCode)
        made.push({ id, type, live, alternates })
      }
      for (const type of ['post', 'page']) {
        const expected = new Map(made.filter((entry) => entry.live && entry.type === type).map((entry) => [entry.id, entry.alternates]))
        for (const lang of [undefined, ...LANGUAGES]) {
          const list = await plain.get(`/api/v1/content/${type}?include=alternates&per_page=100${lang ? `&lang=${encodeURIComponent(lang)}` : ''}`)
          expect(new Map(list.body.data.map((item: any) => [item.id, item.alternates]))).toEqual(expected)
        }
        for (const [id, alternates] of expected) {
          for (const alternate of alternates) {
            const show = await plain.get(`/api/v1/content/${type}/${encodeURIComponent(alternate.slug)}?lang=${encodeURIComponent(alternate.language)}&include=alternates`)
            expect([type, alternate, show.status, show.body.data?.id, show.body.data?.slug, show.body.data?.alternates]).toEqual([type, alternate, 200, id, alternate.slug, alternates])
            resolved++
          }
        }
      }
    }
    expect(resolved).toBeGreaterThan(100)
  }, 120_000)
})

/** A random `fields` value naming `keys` in a shuffled order, with repeats, blanks and empty entries. */
function fieldsValue(rng: ReturnType<typeof random>, keys: string[]): string {
  const parts = [...keys, ...keys.filter(() => rng.next() < 0.2)]
  for (let i = parts.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1))
    ;[parts[i], parts[j]] = [parts[j], parts[i]]
  }
  return parts.map((part) => (rng.next() < 0.1 ? ` ${part} ` : part) + (rng.next() < 0.1 ? ',' : '')).join(',')
}

/**
 * A random site for the fields tests: authors, images, terms, several
 * languages, some entries withheld by the extension. Returns each entry's
 * slug in a language (its default-language one when it has no row in it).
 */
async function fieldsSite(rng: ReturnType<typeof random>): Promise<((lang: string) => string)[]> {
  const authors = [await addAuthor(db.sql, 'Ada'), await addAuthor(db.sql, 'Bo')]
  const images = [await addImage(db.sql, 'uploads/a.jpg', { thumbnail: 'uploads/a-t.jpg' }), await addImage(db.sql, 'https://cdn.example.org/b.jpg')]
  const terms = [await addTerm(db.sql, 'tag', 'One'), await addTerm(db.sql, 'category', 'Two')]
  const slugs: ((lang: string) => string)[] = []
  for (let i = 0; i < 24; i++) {
    const translations: Record<string, TranslationFields> = {}
    for (const code of LANGUAGES) {
      if (code !== 'en' && rng.next() < 0.5) continue
      translations[code] = { title: rng.next() < 0.9 ? `Entry ${i} ${code}` : null, slug: `${code}-${i}`, excerpt: rng.next() < 0.5 ? 'About' : null, body: 'word '.repeat(i) }
    }
    slugs.push((lang) => `${lang in translations ? lang : 'en'}-${i}`)
    await addEntry(db.sql, {
      publishedAt: rng.pick([null, new Date(Date.now() - (i + 1) * HOUR)]),
      authorId: rng.pick([null, ...authors]),
      imageId: rng.pick([null, ...images]),
      termIds: rng.next() < 0.5 ? terms : [],
      translations,
    })
  }
  return slugs
}

describe('C44: fields', () => {
  for (const [name, api, allowed] of [
    ['without extensions', plain, [...C12_KEYS, 'alternates']],
    ['with an extension that adds keys and withholds items', extended, [...C12_KEYS, 'alternates', ...EXTENSION_KEYS]],
  ] as [string, TestApp, string[]][]) {
    test(`${name}: random selections are the full item restricted to those keys, in their usual order, on both routes`, async () => {
      const rng = random(name.length)
      const slugs = await fieldsSite(rng)
      for (let i = 0; i < 60; i++) {
        const keys = allowed.filter(() => rng.next() < 0.35)
        if (keys.length === 0) keys.push(rng.pick(allowed))
        const include = rng.next() < 0.3
        const lang = rng.pick(['en', 'fr', 'pt-BR'])
        const path = rng.next() < 0.5 ? `/api/v1/content/post?per_page=${1 + Math.floor(rng.next() * 30)}&page=${rng.pick([1, 1, 2])}&lang=${lang}` : `/api/v1/content/post/${rng.pick(slugs)(lang)}?lang=${lang}`
        // The full item of the same request: with alternates when the selection names them or include asks for them.
        const full = await api.get(`${path}${include || keys.includes('alternates') ? '&include=alternates' : ''}`)
        const selected = await api.get(`${path}&fields=${encodeURIComponent(fieldsValue(rng, keys))}${include ? '&include=alternates' : ''}`)
        const wanted = new Set(keys)
        expect(full.status).toBe(200)
        const expected = 'meta' in full.body ? { data: full.body.data.map((item: any) => restrict(item, wanted)), meta: full.body.meta } : { data: restrict(full.body.data, wanted) }
        expect([path, keys, selected.status, selected.text]).toEqual([path, keys, 200, JSON.stringify(expected)])
      }
    }, 60_000)
  }

  test('fields=alternates includes them without include=alternates; include=alternates with fields that do not name them leaves them out, but callbacks saw them', async () => {
    const { hello } = await smallSite()
    expect((await plain.get('/api/v1/content/post/hello?fields=alternates')).body).toEqual({ data: { alternates: HELLO_ALTERNATES } })
    expect((await plain.get('/api/v1/content/post/hello?fields=id&include=alternates')).body).toEqual({ data: { id: hello } })
    expect((await extended.get('/api/v1/content/post/hello?fields=alternate_count,id')).body).toEqual({ data: { id: hello, alternate_count: null } })
    expect((await extended.get('/api/v1/content/post/hello?fields=alternate_count,id&include=alternates')).body).toEqual({ data: { id: hello, alternate_count: 4 } })
  })

  test('a blank fields is as if absent; blanks around keys, empty entries and repeats are skipped', async () => {
    await smallSite()
    const full = await plain.get('/api/v1/content/post')
    for (const value of ['', ',', '%20', ',%20,']) expect((await plain.get(`/api/v1/content/post?fields=${value}`)).text).toBe(full.text)
    const plainIds = await plain.get('/api/v1/content/post?fields=id,title')
    for (const value of ['title,id', '%20title%20,,id,', 'id,id,title,title']) expect((await plain.get(`/api/v1/content/post?fields=${value}`)).text).toBe(plainIds.text)
    // C10: repeated, the last one wins.
    expect((await plain.get('/api/v1/content/post?fields=nope&fields=title,id')).text).toBe(plainIds.text)
    expect((await plain.get('/api/v1/content/post/hello?include=nope&include=alternates&fields=alternates')).body).toEqual({ data: { alternates: HELLO_ALTERNATES } })
  })

  test('an unknown key is a 400 naming the first unknown key in the order given, both routes, before any statement', async () => {
    await smallSite()
    const cases: [TestApp, string, string][] = [
      [plain, 'id,nope,zap', 'nope'],
      [plain, 'ID', 'ID'],
      [plain, 'body', 'body'],
      [plain, 'title,%20x%20', 'x'],
      [plain, 'word_count', 'word_count'],
      [plain, '__proto__', '__proto__'],
      [extended, 'word_count,constructor', 'constructor'],
      [extended, 'data', 'data'],
    ]
    for (const [api, value, key] of cases) {
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        api.statements.length = 0
        const response = await api.get(`${path}?fields=${value}`)
        expect([path, value, response.status, response.body]).toEqual([path, value, 400, { error: `The fields parameter names an unknown field: ${key}.` }])
        expect(api.statements).toEqual([])
      }
    }
    expect((await extended.get('/api/v1/content/post/hello?fields=word_count')).body).toEqual({ data: { word_count: 3 } })
  })

  test('C43: Link URLs keep include and fields, normalised (the item order, each key once), and lead to items of the same shape', async () => {
    for (let i = 0; i < 5; i++) await addEntry(db.sql, { publishedAt: new Date(Date.now() - (i + 1) * HOUR) })
    const first = await plain.get('/api/v1/content/post?per_page=2&fields=title,%20id,title,&include=alternates')
    const link = links(first.headers)
    expect(link.first).toBe(`${BASE}/api/v1/content/post?per_page=2&include=alternates&fields=id,title`)
    expect(link.next).toStartWith(`${BASE}/api/v1/content/post?per_page=2&include=alternates&fields=id,title&after=`)
    const next = await plain.get(link.next!.slice(BASE.length))
    for (const item of next.body.data) expect(Object.keys(item)).toEqual(['id', 'title'])
    expect(links((await plain.get('/api/v1/content/post?per_page=2&fields=alternates')).headers).last).toBe(`${BASE}/api/v1/content/post?per_page=2&include=alternates&fields=alternates&page=3`)
  })
})

describe('C44/C45 with the cache (C35–C38)', () => {
  test('two selections never share an answer; the same selection written otherwise does; each is byte-identical to the uncached answer', async () => {
    await smallSite()
    await settled()
    const selections = ['', 'fields=id', 'fields=id,title', 'fields=title,id', 'fields=id,title,', 'include=alternates', 'fields=alternates', 'fields=id,alternates', 'fields=id&include=alternates', 'fields=alternates,id&include=alternates', 'fields=id,alternate_count', 'fields=id,alternate_count&include=alternates', 'fields=word_count']
    for (const [api, uncached] of [[cached, plain], [cachedExtended, extended]] as [CachedTestApp, TestApp][]) {
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        const answers = new Map<string, string>()
        for (const selection of selections) {
          const url = `${path}?${selection}`
          const expected = await uncached.get(url)
          if (expected.status === 400) continue
          const [miss, hit] = [await api.get(url), await api.get(url)]
          expect([url, hit.headers.get('x-cache'), hit.text, hit.headers.get('etag')]).toEqual([url, 'HIT', miss.text, miss.headers.get('etag')])
          expect([url, miss.text, miss.headers.get('etag')]).toEqual([url, expected.text, expected.headers.get('etag')])
          answers.set(selection, `${miss.headers.get('etag')} ${miss.headers.get('link')}`)
        }
        // Equal ETags only where the normalised selection is equal (and, then, equal Link headers too).
        const same = (a: string, b: string) => answers.get(a) === answers.get(b)
        expect(same('fields=id,title', 'fields=title,id') && same('fields=id,title', 'fields=id,title,')).toBe(true)
        expect(same('fields=alternates,id&include=alternates', 'fields=id,alternates')).toBe(true)
        const distinct = new Set(['', 'fields=id', 'fields=id,title', 'include=alternates', 'fields=alternates', 'fields=id,alternates'].map((selection) => answers.get(selection)))
        expect(distinct.size).toBe(6)
      }
      // The same selection written in another order is served from the answer the first one left.
      await api.get('/api/v1/content/post?fields=slug,title')
      expect((await api.get('/api/v1/content/post?fields=title,slug')).headers.get('x-cache')).toBe('HIT')
    }
  })

  test('C36: an outside write to a translation updates alternates at once, never stale', async () => {
    const { hello } = await smallSite()
    await settled()
    const paths = ['/api/v1/content/post?include=alternates', '/api/v1/content/post/hello?include=alternates', '/api/v1/content/post/hello?fields=alternates']
    const alternatesOf = async (api: CachedTestApp, path: string) => {
      const { data } = (await api.get(path)).body
      return Array.isArray(data) ? data.find((item: any) => item.id === hello).alternates : data.alternates
    }
    const edits: [string, () => Promise<unknown>, { language: string; slug: string }[]][] = [
      ['a slug renamed', () => db.sql`update entry_translations set slug = 'salut' where entry_id = ${hello} and language_code = 'fr'`, [HELLO_ALTERNATES[0], { language: 'fr', slug: 'salut' }, ...HELLO_ALTERNATES.slice(2)]],
      ['a slug set', () => db.sql`update entry_translations set slug = 'hallo' where entry_id = ${hello} and language_code = 'de'`, [{ language: 'de', slug: 'hallo' }, HELLO_ALTERNATES[0], { language: 'fr', slug: 'salut' }, ...HELLO_ALTERNATES.slice(2)]],
      ['a translation removed', () => db.sql`delete from entry_translations where entry_id = ${hello} and language_code in ('pt-BR', 'pt-br')`, [{ language: 'de', slug: 'hallo' }, HELLO_ALTERNATES[0], { language: 'fr', slug: 'salut' }]],
    ]
    for (const api of [cached, cachedExtended]) for (const path of paths) await api.get(path)
    for (const [name, write, expected] of edits) {
      const heard = [cached.nextChange('entry_translations'), cachedExtended.nextChange('entry_translations')]
      await write()
      await Promise.all(heard)
      for (const api of [cached, cachedExtended]) {
        for (const path of paths) {
          expect([name, path, await alternatesOf(api, path)]).toEqual([name, path, expected])
          expect((await api.get(path)).headers.get('x-cache')).toBe('HIT')
        }
      }
    }
    expect((await cached.get('/api/v1/content/post/salut?lang=fr&fields=id')).body).toEqual({ data: { id: hello } })
    expect((await cached.get('/api/v1/content/post/bonjour?lang=fr&fields=id')).status).toBe(404)
  })
})
