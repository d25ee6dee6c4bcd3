import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { databaseClockPassed, databaseTime, stillBefore } from './support/database-clock'
import { testApp } from './support/app'
import { addAuthor, addEntry, addImage, addLanguage, addTerm, clearContent } from './support/fixtures'

const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
await addLanguage(db.sql, 'pt-BR', 'Português')
const api = testApp(db.url)
afterAll(async () => {
  await api.close()
  await db.sql.end()
})
beforeEach(() => clearContent(db.sql))

const HOUR = 3_600_000
const ago = (hours: number) => new Date(Date.now() - hours * HOUR)
const ids = (body: any) => body.data.map((item: any) => item.id)

describe('visibility', () => {
  test('C1: only published entries whose time has come are listed; embargoed ones behave as scheduled', async () => {
    const live = await addEntry(db.sql, { publishedAt: ago(1) })
    const undated = await addEntry(db.sql, { publishedAt: null })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + HOUR) })
    await addEntry(db.sql, { status: 'draft', publishedAt: ago(2) })
    await addEntry(db.sql, { status: 'scheduled', publishedAt: new Date(Date.now() + HOUR) })
    await addEntry(db.sql, { status: 'scheduled', publishedAt: ago(2) })
    const { body } = await api.get('/api/v1/content/post')
    expect(ids(body)).toEqual([live, undated])
    expect(body.meta.total).toBe(2)
    // What the database could get wrong: every date shown has come, by the database's own clock.
    const [{ now }] = await db.sql<{ now: Date }[]>`select now()`
    expect(body.data.filter((item: any) => item.published_at !== null && new Date(item.published_at) > now)).toEqual([])
  })

  test('C1: an entry published with a future date appears by itself once its time passes', async () => {
    // The database's clock decides (C1), so the go-live is taken from it, and waited for on it.
    const goLive = await databaseTime(db.sql, 2000)
    const soon = await addEntry(db.sql, { publishedAt: goLive, translations: { en: { slug: 'soon' } } })
    const listBefore = await api.get('/api/v1/content/post')
    const slugBefore = await api.get('/api/v1/content/post/soon')
    expect(await stillBefore(db.sql, goLive), 'the two requests took the whole 2 s before the go-live: too slow a machine to judge').toBe(true)
    expect([listBefore.body.meta.total, slugBefore.status]).toEqual([0, 404])
    await databaseClockPassed(db.sql, goLive)
    expect(ids((await api.get('/api/v1/content/post')).body)).toEqual([soon])
    expect((await api.get('/api/v1/content/post/soon')).body.data.id).toBe(soon)
  })

  test('C2: drafts, scheduled and embargoed entries leak through no slug, count, header or error', async () => {
    await addEntry(db.sql, { status: 'draft', translations: { en: { slug: 'secret-draft', title: 'Secret' } } })
    await addEntry(db.sql, { status: 'scheduled', translations: { en: { slug: 'secret-scheduled' } } })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + HOUR), translations: { en: { slug: 'secret-embargo' } } })
    // In French, these English-only entries can be reached only through C19's fallback to the default-language slug.
    for (const query of ['', '?lang=fr']) {
      const missing = await api.get(`/api/v1/content/post/no-such-entry${query}`)
      for (const slug of ['secret-draft', 'secret-scheduled', 'secret-embargo']) {
        const hidden = await api.get(`/api/v1/content/post/${slug}${query}`)
        expect([slug, query, hidden.status]).toEqual([slug, query, 404])
        expect(hidden.text).toBe(missing.text)
        expect([...hidden.headers.keys()]).toEqual([...missing.headers.keys()])
      }
    }
    const list = await api.get('/api/v1/content/post')
    expect(list.body).toEqual({ data: [], meta: { current_page: 1, last_page: 1, per_page: 20, total: 0 } })
    expect(list.text).not.toContain('Secret')
    // The same lookup does find a live entry through the fallback: the 404s above are not for another reason.
    const live = await addEntry(db.sql, { translations: { en: { slug: 'public-english' } } })
    expect((await api.get('/api/v1/content/post/public-english?lang=fr')).body.data.id).toBe(live)
  })
})

describe('paths and methods', () => {
  test('C3: HEAD answers as GET without a body; a trailing slash is accepted', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello', '/api/v1/content/nope', '/api/v1/content/post?page=x']) {
      const get = await api.get(path)
      const head = await api.get(path, { method: 'HEAD' })
      expect(head.status).toBe(get.status)
      expect(head.text).toBe('')
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'))
    }
    const slash = await api.get('/api/v1/content/post/')
    const plain = await api.get('/api/v1/content/post')
    expect(slash.status).toBe(200)
    expect(slash.body).toEqual(plain.body)
    expect((await api.get('/api/v1/content/post/hello/')).body).toEqual((await api.get('/api/v1/content/post/hello')).body)
  })

  test('C3: any other method on an API path is 405 with Allow', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        const response = await api.get(path, { method })
        expect(response.status).toBe(405)
        expect(response.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
        expect(response.body).toEqual({ error: 'Method not allowed.' })
      }
    }
  })

  test('C4: any other path is 404 Not found, and every response is JSON with charset', async () => {
    // `/` (a redirect to /docs) and `/api/v1` (the index) are routes of C46.
    for (const path of ['/index.html', '/api', '/api/v1/nope', '/api/v1/content', '/api/v2/content/post', '/api/v1/content/post/a/b', '/api/v1/taxonomies/tag']) {
      const response = await api.get(path)
      expect([path, response.status, response.body]).toEqual([path, 404, { error: 'Not found.' }])
    }
    for (const path of ['/nope', '/api/v1/content/post', '/api/v1/content/post?page=0', '/api/v1/content/nope']) {
      expect((await api.get(path)).headers.get('content-type')).toBe('application/json; charset=utf-8')
    }
  })

  test('C5: the type is matched case-sensitively and checked before the slug', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    expect((await api.get('/api/v1/content/Post')).body).toEqual({ error: 'Content type not found.' })
    const unknown = await api.get('/api/v1/content/nope/hello')
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'Content type not found.' }])
    const noSlug = await api.get('/api/v1/content/post/nope')
    expect([noSlug.status, noSlug.body]).toEqual([404, { error: 'Not found.' }])
    // A type that cannot exist (bad percent-encoding, a NUL) is an unknown type, before any slug.
    for (const path of ['/api/v1/content/%E0%A4%A', '/api/v1/content/%00', '/api/v1/content/nope/%E0%A4%A', '/api/v1/content/%00/hello']) {
      const response = await api.get(path)
      expect([path, response.status, response.body]).toEqual([path, 404, { error: 'Content type not found.' }])
    }
  })
})

describe('query parameters', () => {
  test('C6: page and per_page must be positive integers in decimal digits', async () => {
    for (const name of ['page', 'per_page']) {
      for (const value of ['0', '-1', '2.0', '0x10', '1e2', '', 'abc', ' 2', '%2B2', '1,5']) {
        const response = await api.get(`/api/v1/content/post?${name}=${value}`)
        expect([name, value, response.status, response.body]).toEqual([name, value, 400, { error: `The ${name} parameter must be a positive integer.` }])
      }
    }
    const padded = await api.get('/api/v1/content/post?page=007&per_page=05')
    expect([padded.status, padded.body.meta.current_page, padded.body.meta.per_page]).toEqual([200, 7, 5])
    // A bad parameter is answered before the database is asked.
    api.statements.length = 0
    await api.get('/api/v1/content/post?page=x')
    expect(api.statements).toEqual([])
  })

  test('C7: per_page above 100 is clamped to 100, and meta shows it', async () => {
    for (const value of ['101', '500', '99999999999999999999999']) {
      expect((await api.get(`/api/v1/content/post?per_page=${value}`)).body.meta.per_page).toBe(100)
    }
    expect((await api.get('/api/v1/content/post?per_page=100')).body.meta.per_page).toBe(100)
  })

  test('C8: last_page is max(1, ceil(total/per_page)); a page past the last is empty with the true meta', async () => {
    expect((await api.get('/api/v1/content/post')).body.meta).toEqual({ current_page: 1, last_page: 1, per_page: 20, total: 0 })
    for (let i = 0; i < 7; i++) await addEntry(db.sql)
    expect((await api.get('/api/v1/content/post?per_page=3')).body.meta).toEqual({ current_page: 1, last_page: 3, per_page: 3, total: 7 })
    expect((await api.get('/api/v1/content/post?per_page=7')).body.meta.last_page).toBe(1)
    const third = await api.get('/api/v1/content/post?per_page=3&page=3')
    expect(third.body.data).toHaveLength(1)
    const past = await api.get('/api/v1/content/post?per_page=3&page=9')
    expect([past.status, past.body]).toEqual([200, { data: [], meta: { current_page: 9, last_page: 3, per_page: 3, total: 7 } }])
  })

  test('C9: lang picks a configured language; an unknown one, or none, gives the default; unknown parameters are ignored', async () => {
    await addEntry(db.sql, { translations: { en: { title: 'Hello', slug: 'hello' }, fr: { title: 'Bonjour', slug: 'bonjour' }, 'pt-BR': { title: 'Olá', slug: 'ola' } } })
    const title = async (query: string) => (await api.get(`/api/v1/content/post${query}`)).body.data[0].title
    expect(await title('')).toBe('Hello')
    expect(await title('?lang=fr')).toBe('Bonjour')
    expect(await title('?lang=pt-BR')).toBe('Olá')
    expect(await title('?lang=xx')).toBe('Hello')
    expect(await title('?lang=FR')).toBe('Hello')
    expect(await title('?lang=')).toBe('Hello')
    expect(await title('?lang=fr&utm_source=x&sort=title')).toBe('Bonjour')
    expect(await title('?lang=%00')).toBe('Hello')
    expect(await title('?lang=fr%00')).toBe('Hello')
  })

  test('C10: a repeated parameter: the last one wins', async () => {
    await addEntry(db.sql, { translations: { en: { title: 'Hello' }, fr: { title: 'Bonjour' } } })
    await addEntry(db.sql)
    const response = await api.get('/api/v1/content/post?per_page=5&per_page=1&page=1&page=2&lang=en&lang=fr')
    expect(response.body.meta).toEqual({ current_page: 2, last_page: 2, per_page: 1, total: 2 })
    expect(response.body.data[0].title).toBe('Bonjour')
    expect((await api.get('/api/v1/content/post?page=x&page=1')).status).toBe(200)
  })
})

describe('ordering and item shape', () => {
  test('C11: published_at descending, nulls last, then id descending, stable across pages', async () => {
    const same = ago(5)
    const a = await addEntry(db.sql, { publishedAt: same })
    const b = await addEntry(db.sql, { publishedAt: null })
    const c = await addEntry(db.sql, { publishedAt: same })
    const d = await addEntry(db.sql, { publishedAt: ago(1) })
    const e = await addEntry(db.sql, { publishedAt: null })
    const f = await addEntry(db.sql, { publishedAt: ago(10) })
    const expected = [d, c, a, f, e, b]
    expect(ids((await api.get('/api/v1/content/post')).body)).toEqual(expected)
    const walked: number[] = []
    for (let page = 1; page <= 3; page++) walked.push(...ids((await api.get(`/api/v1/content/post?per_page=2&page=${page}`)).body))
    expect(walked).toEqual(expected)
  })

  test('C12: an item has exactly the keys of service.md §2.2, in order, and no body or custom field', async () => {
    const id = await addEntry(db.sql, { translations: { en: { slug: 'hello', body: '<p>secret body</p>' } } })
    const [{ cf }] = await db.sql`insert into custom_fields (content_type_id, key) select id, 'mood' from content_types where slug = 'post' returning id as cf`
    await db.sql`insert into field_values (entry_id, custom_field_id, value) values (${id}, ${cf}, '"happy"')`
    const keys = ['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'excerpt', 'meta_title', 'meta_description', 'featured_image', 'terms']
    const list = await api.get('/api/v1/content/post')
    const single = await api.get('/api/v1/content/post/hello')
    expect(Object.keys(list.body.data[0])).toEqual(keys)
    expect(Object.keys(single.body.data)).toEqual(keys)
    expect(Object.keys(list.body)).toEqual(['data', 'meta'])
    expect(Object.keys(list.body.meta)).toEqual(['current_page', 'last_page', 'per_page', 'total'])
    expect(Object.keys(single.body)).toEqual(['data'])
    expect(list.text).not.toContain('secret body')
    expect(list.text).not.toContain('happy')
  })

  test('C13: timestamps are RFC 3339 in UTC, to the second, with +00:00', async () => {
    await addEntry(db.sql, { publishedAt: '2026-03-04T05:06:07.891+02:00', createdAt: '2025-12-31T23:59:59.999-01:00' })
    await addEntry(db.sql, { publishedAt: null, createdAt: '2026-01-01T09:30:00Z' })
    const [dated, undated] = (await api.get('/api/v1/content/post')).body.data
    expect([dated.published_at, dated.created_at]).toEqual(['2026-03-04T03:06:07+00:00', '2026-01-01T00:59:59+00:00'])
    expect([undated.published_at, undated.created_at]).toEqual([null, '2026-01-01T09:30:00+00:00'])
  })

  test('C13: timestamps outside what RFC 3339 can write (years 0001-9999, ±infinity) are clamped, never a 500', async () => {
    const setTimes = (id: number, publishedAt: string, createdAt: string) =>
      db.sql`update entries set published_at = ${publishedAt}::text::timestamptz, created_at = ${createdAt}::text::timestamptz where id = ${id}`
    await setTimes(await addEntry(db.sql), '-infinity', '10000-06-01 00:00:00+00')
    await setTimes(await addEntry(db.sql, { translations: { en: { slug: 'ancient' } } }), '0500-01-01 00:00:00+00', '-infinity')
    const list = await api.get('/api/v1/content/post')
    expect(list.status).toBe(200)
    expect(list.body.data.map((item: any) => [item.published_at, item.created_at])).toEqual([
      ['0500-01-01T00:00:00+00:00', '0001-01-01T00:00:00+00:00'],
      ['0001-01-01T00:00:00+00:00', '9999-12-31T23:59:59+00:00'],
    ])
    expect((await api.get('/api/v1/content/post/ancient')).status).toBe(200)
  })

  test('C14: translated fields come from the selected language, else the default one, per entry, never per field', async () => {
    const both = await addEntry(db.sql, { translations: { en: { title: 'Hello', slug: 'hello', excerpt: 'English excerpt', meta_title: 'MT', meta_description: 'MD' }, fr: { title: 'Bonjour', slug: 'bonjour' } } })
    const englishOnly = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Only English', slug: 'only-english', excerpt: 'E' } } })
    const neither = await addEntry(db.sql, { publishedAt: ago(3), translations: { 'pt-BR': { title: 'Só português', slug: 'so' } } })
    const data = (await api.get('/api/v1/content/post?lang=fr')).body.data
    expect(ids({ data })).toEqual([both, englishOnly, neither])
    expect(data[0]).toMatchObject({ title: 'Bonjour', slug: 'bonjour', excerpt: null, meta_title: null, meta_description: null })
    expect(data[1]).toMatchObject({ title: 'Only English', slug: 'only-english', excerpt: 'E' })
    expect(data[2]).toMatchObject({ title: null, slug: null, excerpt: null, meta_title: null, meta_description: null })
  })

  test('C15: featured_image URLs are absolute; a missing variant is the original; null without an image', async () => {
    const full = await addImage(db.sql, 'uploads/2026/cat.jpg', { thumbnail: '/uploads/2026/cat-thumb.jpg', medium: 'https://img.example.net/cat-medium.jpg', large: 'uploads/x.jpg' })
    const bare = await addImage(db.sql, 'HTTPS://cdn.example.org/dog.jpg', { thumbnail: 'uploads/dog-thumb.jpg' })
    await addEntry(db.sql, { imageId: full, publishedAt: ago(1) })
    await addEntry(db.sql, { imageId: bare, publishedAt: ago(2) })
    await addEntry(db.sql, { publishedAt: ago(3) })
    const [a, b, c] = (await api.get('/api/v1/content/post')).body.data
    expect(a.featured_image).toEqual({
      url: 'https://cms.example.com/media/uploads/2026/cat.jpg',
      thumbnail: 'https://cms.example.com/media/uploads/2026/cat-thumb.jpg',
      medium: 'https://img.example.net/cat-medium.jpg',
    })
    expect(Object.keys(a.featured_image)).toEqual(['url', 'thumbnail', 'medium'])
    expect(b.featured_image).toEqual({ url: 'HTTPS://cdn.example.org/dog.jpg', thumbnail: 'https://cms.example.com/media/uploads/dog-thumb.jpg', medium: 'HTTPS://cdn.example.org/dog.jpg' })
    expect(c.featured_image).toBeNull()

    const cdn = testApp(db.url, { MEDIA_BASE_URL: 'https://cdn.example.com/assets/' })
    expect((await cdn.get('/api/v1/content/post')).body.data[0].featured_image.url).toBe('https://cdn.example.com/assets/uploads/2026/cat.jpg')
    await cdn.close()
    // The default comes from PUBLIC_URL, never from the request's Host header.
    const spoofed = await api.get('/api/v1/content/post', { headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example' } })
    expect(spoofed.text).not.toContain('evil.example')
  })

  test('C16: terms are ordered by position, then term id, on both routes; [] when none', async () => {
    const t1 = await addTerm(db.sql, 'tag', 'Zeta')
    const t2 = await addTerm(db.sql, 'category', 'Alpha')
    const t3 = await addTerm(db.sql, 'tag', 'Mid')
    const entry = await addEntry(db.sql, { publishedAt: ago(1) })
    await db.sql`insert into entry_terms (entry_id, term_id, position) values (${entry}, ${t1}, 2), (${entry}, ${t3}, 1), (${entry}, ${t2}, 1)`
    await addEntry(db.sql, { publishedAt: ago(2) })
    const [tagged, bare] = (await api.get('/api/v1/content/post')).body.data
    expect(tagged.terms).toEqual([
      { id: t2, name: 'Alpha', slug: 'alpha' },
      { id: t3, name: 'Mid', slug: 'mid' },
      { id: t1, name: 'Zeta', slug: 'zeta' },
    ])
    expect(bare.terms).toEqual([])
    // The single entry aggregates its own terms (entryTerms), not the page's.
    expect((await api.get(`/api/v1/content/post/entry-${entry}`)).body.data.terms).toEqual(tagged.terms)
  })

  test('C17: author is {id, name} or null', async () => {
    const author = await addAuthor(db.sql, 'Ada')
    await addEntry(db.sql, { authorId: author, publishedAt: ago(1) })
    await addEntry(db.sql, { publishedAt: ago(2) })
    const [withAuthor, without] = (await api.get('/api/v1/content/post')).body.data
    expect(withAuthor.author).toEqual({ id: author, name: 'Ada' })
    expect(without.author).toBeNull()
  })

  test('C18: meta.total counts the live entries of the type, whatever the language', async () => {
    await addEntry(db.sql, { translations: { fr: { title: 'Seulement français' } } })
    await addEntry(db.sql, { translations: {} })
    await addEntry(db.sql)
    await addEntry(db.sql, { type: 'page' })
    await addEntry(db.sql, { status: 'draft' })
    for (const lang of ['en', 'fr', 'pt-BR']) {
      expect((await api.get(`/api/v1/content/post?lang=${lang}`)).body.meta.total).toBe(3)
    }
  })
})

describe('single entry', () => {
  test('C19: the slug is looked up in the selected language, falling back to the default-language slug of entries without that language', async () => {
    const translated = await addEntry(db.sql, { translations: { en: { slug: 'hello' }, fr: { slug: 'bonjour' } } })
    const untranslated = await addEntry(db.sql, { translations: { en: { slug: 'english-only' } } })
    const get = async (path: string) => (await api.get(path)).body.data?.id ?? null
    expect(await get('/api/v1/content/post/hello')).toBe(translated)
    expect(await get('/api/v1/content/post/bonjour?lang=fr')).toBe(translated)
    expect(await get('/api/v1/content/post/english-only?lang=fr')).toBe(untranslated)
    // An entry that has a French row is not found by its English slug in French.
    expect(await get('/api/v1/content/post/hello?lang=fr')).toBeNull()
    expect(await get('/api/v1/content/post/bonjour')).toBeNull()
  })

  test('C19: a match in the selected language beats a default-language fallback; among equals the lowest id wins', async () => {
    const fallback = await addEntry(db.sql, { translations: { en: { slug: 'shared' } } })
    const french = await addEntry(db.sql, { translations: { en: { slug: 'other' }, fr: { slug: 'shared' } } })
    expect((await api.get('/api/v1/content/post/shared?lang=fr')).body.data.id).toBe(french)
    expect((await api.get('/api/v1/content/post/shared')).body.data.id).toBe(fallback)
    const first = await addEntry(db.sql, { id: 9001, translations: { en: { slug: 'twin' } } })
    await addEntry(db.sql, { id: 9000, status: 'draft', translations: { en: { slug: 'twin' } } })
    await addEntry(db.sql, { id: 9002, translations: { en: { slug: 'twin' } } })
    expect((await api.get('/api/v1/content/post/twin')).body.data.id).toBe(first)
    // The same slug in another type is another entry.
    const page = await addEntry(db.sql, { type: 'page', translations: { en: { slug: 'twin' } } })
    expect((await api.get('/api/v1/content/page/twin')).body.data.id).toBe(page)
  })

  test('C19: among entries found through their default-language slug, the lowest id wins', async () => {
    // Inserted out of order, so that neither insertion order nor the highest id picks the right one.
    await addEntry(db.sql, { id: 9102, translations: { en: { slug: 'twin' } } })
    const lowest = await addEntry(db.sql, { id: 9101, translations: { en: { slug: 'twin' } } })
    await addEntry(db.sql, { id: 9103, translations: { en: { slug: 'twin' } } })
    await addEntry(db.sql, { id: 9100, status: 'draft', translations: { en: { slug: 'twin' } } })
    // Written in French: never a fallback candidate for a French request, whatever its id.
    await addEntry(db.sql, { id: 9000, translations: { en: { slug: 'twin' }, fr: { slug: 'jumeau' } } })
    expect((await api.get('/api/v1/content/post/twin?lang=fr')).body.data.id).toBe(lowest)
    expect((await api.get('/api/v1/content/post/twin?lang=pt-BR')).body.data.id).toBe(9000)
  })

  test('C20: the slug is matched exactly after one URL-decoding; a slash or bad encoding is a 404, never a 500', async () => {
    const accented = await addEntry(db.sql, { translations: { en: { slug: 'café' } } })
    const percent = await addEntry(db.sql, { translations: { en: { slug: '100%25' } } })
    await addEntry(db.sql, { translations: { en: { slug: 'a/b' } } })
    expect((await api.get('/api/v1/content/post/caf%C3%A9')).body.data.id).toBe(accented)
    expect((await api.get('/api/v1/content/post/100%2525')).body.data.id).toBe(percent)
    for (const path of ['/api/v1/content/post/CAF%C3%89', '/api/v1/content/post/a%2Fb', '/api/v1/content/post/a/b', '/api/v1/content/post/%E0%A4%A', '/api/v1/content/post/100%25', '/api/v1/content/post/%00', '/api/v1/content/post/caf%C3%A9%00']) {
      const response = await api.get(path)
      expect([path, response.status, response.body]).toEqual([path, 404, { error: 'Not found.' }])
    }
    expect((await api.get('/api/v1/content/nope/a%2Fb')).body).toEqual({ error: 'Content type not found.' })
  })
})

describe('errors and faults', () => {
  test('C21: an unexpected failure is a 500 with a generic body; the details go to the log only', async () => {
    const broken = await createTestDatabase()
    await broken.sql`alter table authors rename column name to full_name`
    const brokenApi = testApp(broken.url)
    const response = await brokenApi.get('/api/v1/content/post', { headers: { 'x-request-id': 'trace-21' } })
    expect([response.status, response.text]).toEqual([500, '{"error":"Internal server error."}'])
    const logged = brokenApi.logs.map((line) => JSON.parse(line)).find((line) => line.level === 'error')
    expect(logged).toMatchObject({ requestId: 'trace-21', msg: 'request failed', error: { message: expect.stringContaining('a.name') } })
    await brokenApi.close()
    await broken.sql.end()
  })

  // Serving again once the database is back, and other faults: operations.test.ts and database-faults.test.ts.
  test('C22: when the database cannot be reached: 503 with Retry-After', async () => {
    const down = testApp('postgres://postgres@127.0.0.1:1/none', { DATABASE_TIMEOUT_MS: '1000' })
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
      const response = await down.get(path)
      expect([response.status, response.body]).toEqual([503, { error: 'Service unavailable.' }])
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    await down.close()
  })
})

describe('headers', () => {
  test('C29: X-Request-Id echoes a sane incoming id, else is generated; nosniff everywhere', async () => {
    const echoed = await api.get('/api/v1/content/post', { headers: { 'x-request-id': 'abc-123_x.y:z' } })
    expect(echoed.headers.get('x-request-id')).toBe('abc-123_x.y:z')
    for (const insane of ['<script>', 'a'.repeat(200), 'two words']) {
      const replaced = await api.get('/api/v1/content/post', { headers: { 'x-request-id': insane } })
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    }
    for (const [method, path] of [['GET', '/api/v1/content/post'], ['GET', '/nope'], ['POST', '/api/v1/content/post'], ['GET', '/api/v1/content/post?page=0'], ['OPTIONS', '/api/v1/content/post']]) {
      const response = await api.get(path, { method, headers: { origin: 'https://app.example' } })
      expect([path, method, response.headers.get('x-content-type-options')]).toEqual([path, method, 'nosniff'])
      expect(response.headers.get('x-request-id')).toBeTruthy()
    }
  })
})
