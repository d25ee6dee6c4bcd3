import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { defineExtension, t } from '../src/hooks/extension'
import { prefixWord } from '../src/content/search-query'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addEntry, addLanguage, clearContent } from './support/fixtures'
import { links } from './support/links'
import { registryOf } from './support/openapi'

/**
 * C55: a search box's search: the last bare word as a prefix, exact words
 * first, and `include=highlights`.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')

/** Sees `highlights` in the chain: whether the title has a mark. */
const marking = defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data) => ({ ...data, title_marked: data.highlights?.title?.includes('<mark>') ?? null }), {
    schema: { add: { title_marked: t.Union([t.Boolean(), t.Null()]) } },
  })
})

const api = testApp(db.url)
const extended = testApp(db.url, {}, await registryOf(marking))
const cached = await cachedTestApp(db.url)
afterAll(async () => {
  for (const app of [api, extended, cached]) await app.close()
  await db.sql.end()
})
beforeEach(async () => {
  const cleared = cached.nextChange('entries')
  await clearContent(db.sql)
  await cleared
})

const HOUR = 3_600_000
const BASE = 'https://cms.example.com'
const ago = (hours: number) => new Date(Date.now() - hours * HOUR)
const ids = (body: any) => body.data.map((item: any) => item.id)
const found = async (search: string, order = 'date') => ids((await api.get(`/api/v1/content/post?order=${order}&search=${encodeURIComponent(search)}`)).body)

describe('C55: the last word as a prefix', () => {
  test('prefixWord: bare last words of two letters or more; quoted, negated, spaced and one-letter ones are not', () => {
    expect(prefixWord('archi')).toEqual({ head: '', word: 'archi', alternative: false })
    expect(prefixWord('coffee  archi')).toEqual({ head: 'coffee  ', word: 'archi', alternative: false })
    expect(prefixWord('tea OR archi')).toEqual({ head: 'tea OR ', word: 'archi', alternative: true })
    expect(prefixWord('or archi')?.alternative).toBe(false)
    expect(prefixWord('ar')?.word).toBe('ar')
    for (const text of ['archi ', '"archi"', 'coffee "archi', '"tea archi', '-archi', 'tea -archi', 'a', 'tea x', 'x.', '日', '']) expect([text, prefixWord(text)]).toEqual([text, null])
    // Inside a closed phrase's end, or after one: the count of quotes before it says which.
    expect(prefixWord('"black tea" archi')?.word).toBe('archi')
    expect(prefixWord('日本')?.word).toBe('日本')
  })

  test('as the user types: each prefix of a word finds it, stemmed or not; whole words still find what C42 found', async () => {
    const architecture = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Architecture notes', slug: 'a' } } })
    const studies = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Case studies', slug: 'b', excerpt: 'Coffee at work' } } })
    const coffeehouse = await addEntry(db.sql, { publishedAt: ago(3), translations: { en: { title: 'The Coffeehouse', slug: 'c' } } })
    // Hidden entries are never found by a prefix either (C2).
    await addEntry(db.sql, { status: 'draft', translations: { en: { title: 'Architecture draft', slug: 'd' } } })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + 48 * HOUR), translations: { en: { title: 'Architecture soon', slug: 'e' } } })
    for (const typed of ['ar', 'arc', 'archi', 'architect', 'Architectu', 'architecture']) expect([typed, await found(typed)]).toEqual([typed, [architecture]])
    // "studie": its stem is "studi", a prefix of the document's stem of "studies".
    for (const typed of ['stu', 'studie', 'studies']) expect([typed, await found(typed)]).toEqual([typed, [studies]])
    expect(await found('coffee')).toEqual([studies, coffeehouse])
    expect(await found('coffee archi')).toEqual([])
    expect(await found('case stu')).toEqual([studies])
    expect(await found('notes or stu')).toEqual([architecture, studies])
    expect((await api.get('/api/v1/content/post?search=archi')).body.meta.total).toBe(1)
    // Three letters that are a stop word as a word ("the": no stem): the words they begin (search_prefixes are not read).
    const theory = await addEntry(db.sql, { publishedAt: ago(4), translations: { en: { title: 'Theory of tea', slug: 'f' } } })
    expect(await found('the')).toEqual([theory])
  })

  test('quoted, negated and spaced last words, and one-letter ones, are words only', async () => {
    const architecture = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Architecture and tea', slug: 'a' } } })
    const xylophone = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Xylophone and tea', slug: 'b' } } })
    expect(await found('"archi"')).toEqual([])
    expect(await found('tea "archi"')).toEqual([])
    expect(await found('"tea archi')).toEqual([])
    expect(await found('archi ')).toEqual([])
    expect(await found('tea archi\t')).toEqual([])
    // Negated: only the word "archi" is left out, not the words it begins.
    expect(await found('tea -archi')).toEqual([architecture, xylophone])
    expect(await found('x')).toEqual([])
    expect(await found('tea x')).toEqual([])
    expect(await found('xy')).toEqual([xylophone])
  })

  test('exact words rank above prefix matches, whatever their ranks; each kind ranked as C42; cursors walk them', async () => {
    // Only in the body, once: the lowest rank an exact match can have.
    const exact = await addEntry(db.sql, { publishedAt: ago(3), translations: { en: { title: 'Bridges', slug: 'a', body: 'An arch.' } } })
    // Three prefix matches in the title: ranked far above `exact` by ts_rank_cd, yet after it.
    const titled = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Archway archives archers', slug: 'b' } } })
    const bodied = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Other', slug: 'c', body: 'An archway.' } } })
    const exactInTitle = await addEntry(db.sql, { publishedAt: ago(4), translations: { en: { title: 'The arch', slug: 'd' } } })
    expect(await found('arch', 'relevance')).toEqual([exactInTitle, exact, titled, bodied])
    // Two words (a stop word first): the GIN index of search_documents ranks them the same way.
    expect(await found('the arch', 'relevance')).toEqual([exactInTitle, exact, titled, bodied])
    expect(await found('arch')).toEqual([bodied, titled, exact, exactInTitle])
    const walked: number[] = []
    let next: string | undefined = '/api/v1/content/post?search=arch&per_page=1'
    while (next !== undefined) {
      const response = await api.get(next)
      expect(response.status).toBe(200)
      walked.push(...ids(response.body))
      const url: string | undefined = links(response.headers).next
      next = url?.slice(BASE.length)
    }
    expect(walked).toEqual([exactInTitle, exact, titled, bodied])
  })

  test('C14: a prefix in the shown language, with its stemming', async () => {
    const french = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Coffee houses', slug: 'a' }, fr: { title: 'Les cafés de Paris', slug: 'a-fr' } } })
    const english = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Cafeteria food', slug: 'b' } } })
    const list = async (search: string) => ids((await api.get(`/api/v1/content/post?lang=fr&order=date&search=${encodeURIComponent(search)}`)).body)
    expect(await list('caf')).toEqual([french, english])
    expect(await list('cafés')).toEqual([french])
    expect(await list('coff')).toEqual([])
  })
})

describe('C55: include=highlights', () => {
  test('title and excerpt, HTML-escaped first, each matching word marked; a null field stays null', async () => {
    const id = await addEntry(db.sql, {
      translations: { en: { title: 'Tom & Jerry <b>bold</b> "coffee" it\'s amp', slug: 'a', excerpt: null, body: 'coffee' } },
    })
    const other = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Coffees, coffee and COFFEE', slug: 'b', excerpt: 'We brewed coffee & tea.' } } })
    const coffee = await api.get('/api/v1/content/post?search=coffee&include=highlights')
    expect(coffee.status).toBe(200)
    const byId = new Map(coffee.body.data.map((item: any) => [item.id, item.highlights]))
    expect(byId.get(id)).toEqual({ title: 'Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt; &quot;<mark>coffee</mark>&quot; it&#39;s amp', excerpt: null })
    expect(byId.get(other)).toEqual({ title: '<mark>Coffees</mark>, <mark>coffee</mark> and <mark>COFFEE</mark>', excerpt: 'We brewed <mark>coffee</mark> &amp; tea.' })
    // A word that an escaped character holds is not a word of the text: only the real one is marked.
    const amp = await api.get('/api/v1/content/post?search=amp&include=highlights')
    expect(amp.body.data[0].highlights.title).toBe('Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt; &quot;coffee&quot; it&#39;s <mark>amp</mark>')
    // Only <mark> is markup: once the marks are gone, the text is the escaped title.
    for (const search of ['bold', 'jerry tom', 'bol', 'coffee amp', 'tom jerr']) {
      const response = await api.get(`/api/v1/content/post?search=${search}&include=highlights`)
      const title: string = response.body.data.find((item: any) => item.id === id).highlights.title
      expect([search, title.replaceAll('<mark>', '').replaceAll('</mark>', '')]).toEqual([search, 'Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt; &quot;coffee&quot; it&#39;s amp'])
      expect([search, title.replaceAll(/<\/?mark>/g, '').includes('<')]).toEqual([search, false])
    }
  })

  test('prefix matches are marked; the shown translation is highlighted with its language', async () => {
    await addEntry(db.sql, { translations: { en: { title: 'Architecture & archives', slug: 'a', excerpt: 'Arches' } } })
    const [item] = (await api.get('/api/v1/content/post?search=archi&include=highlights')).body.data
    expect(item.highlights).toEqual({ title: '<mark>Architecture</mark> &amp; <mark>archives</mark>', excerpt: 'Arches' })
    await addEntry(db.sql, { translations: { en: { title: 'Coffee', slug: 'c' }, fr: { title: 'Les cafés', slug: 'c-fr', excerpt: 'Un café' } } })
    const [french] = (await api.get('/api/v1/content/post?lang=fr&search=café&include=highlights')).body.data
    expect(french.highlights).toEqual({ title: 'Les <mark>cafés</mark>', excerpt: 'Un <mark>café</mark>' })
  })

  test('null without search, on lists and the single entry; after terms and alternates; fields may name them; Link keeps them; callbacks see them', async () => {
    await addEntry(db.sql, { translations: { en: { title: 'Coffee', slug: 'coffee' }, fr: { title: 'Café', slug: 'cafe' } } })
    const list = await api.get('/api/v1/content/post?include=highlights')
    expect(list.body.data[0].highlights).toBeNull()
    expect(Object.keys(list.body.data[0]).slice(-2)).toEqual(['terms', 'highlights'])
    const show = await api.get('/api/v1/content/post/coffee?include=highlights,alternates')
    expect(show.status).toBe(200)
    expect(Object.keys(show.body.data).slice(-3)).toEqual(['terms', 'alternates', 'highlights'])
    expect(show.body.data.highlights).toBeNull()
    const both = await api.get('/api/v1/content/post?search=coffee&include=alternates,highlights&per_page=1')
    expect(Object.keys(both.body.data[0]).slice(-3)).toEqual(['terms', 'alternates', 'highlights'])
    expect(both.body.data[0].highlights).toEqual({ title: '<mark>Coffee</mark>', excerpt: null })
    expect(links(both.headers).first).toBe(`${BASE}/api/v1/content/post?per_page=1&search=coffee&include=alternates,highlights`)
    // Named in fields: asked for, as include does; fields leaves out what it does not name.
    expect((await api.get('/api/v1/content/post?search=coffee&fields=highlights,id')).body.data).toEqual([{ id: expect.any(Number), highlights: { title: '<mark>Coffee</mark>', excerpt: null } }])
    expect((await api.get('/api/v1/content/post?search=coffee&fields=id&include=highlights')).body.data).toEqual([{ id: expect.any(Number) }])
    expect((await api.get('/api/v1/content/post/coffee?fields=highlights')).body).toEqual({ data: { highlights: null } })
    // The chain sees them, and its own keys follow.
    const seen = await extended.get('/api/v1/content/post?search=coffee&include=highlights')
    expect(seen.body.data[0].title_marked).toBe(true)
    expect((await extended.get('/api/v1/content/post?include=highlights')).body.data[0].title_marked).toBeNull()
    expect((await extended.get('/api/v1/content/post?search=coffee')).body.data[0].title_marked).toBeNull()
  })

  test('the cache keeps answers with and without highlights apart', async () => {
    await addEntry(db.sql, { translations: { en: { title: 'Coffee', slug: 'coffee' } } })
    for (let round = 0; round < 2; round++) {
      expect((await cached.get('/api/v1/content/post?search=coffee')).body.data[0].highlights).toBeUndefined()
      expect((await cached.get('/api/v1/content/post?search=coffee&include=highlights')).body.data[0].highlights).toEqual({ title: '<mark>Coffee</mark>', excerpt: null })
      expect((await cached.get('/api/v1/content/post?search=coff&include=highlights')).body.data[0].highlights).toEqual({ title: '<mark>Coffee</mark>', excerpt: null })
      expect((await cached.get('/api/v1/content/post?search=coffee%20&include=highlights')).body.data[0].highlights).toEqual({ title: '<mark>Coffee</mark>', excerpt: null })
      expect((await cached.get('/api/v1/content/post?search=coff%20&include=highlights')).body.data).toEqual([])
    }
  })
})
