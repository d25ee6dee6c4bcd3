import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addAuthor, addEntry, addLanguage, addTerm, clearContent, writeUnheard } from './support/fixtures'
import { links } from './support/links'
import { random } from './support/random'

const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
await addLanguage(db.sql, 'de', 'Deutsch')
const api = testApp(db.url)
afterAll(async () => {
  await api.close()
  await db.sql.end()
})
beforeEach(() => clearContent(db.sql))

const HOUR = 3_600_000
const ago = (hours: number) => new Date(Date.now() - hours * HOUR)
const ids = (body: any) => body.data.map((item: any) => item.id)
const BASE = 'https://cms.example.com'


/** Every item of a list, by following rel="next" from `path`; and the totals each page said. */
async function walk(path: string): Promise<{ ids: number[]; totals: number[] }> {
  const seen: number[] = []
  const totals: number[] = []
  let next: string | undefined = path
  for (let pages = 0; next !== undefined; pages++) {
    if (pages > 200) throw new Error('the walk does not end')
    const response = await api.get(next)
    expect(response.status).toBe(200)
    seen.push(...ids(response.body))
    totals.push(response.body.meta.total)
    const url: string | undefined = links(response.headers).next
    next = url === undefined ? undefined : url.slice(BASE.length)
  }
  return { ids: seen, totals }
}

/** Every item of a list, by page number. */
async function pages(path: string, perPage: number): Promise<{ ids: number[]; total: number }> {
  const first = await api.get(`${path}&per_page=${perPage}`)
  expect(first.status).toBe(200)
  const seen = [...ids(first.body)]
  for (let page = 2; page <= first.body.meta.last_page; page++) seen.push(...ids((await api.get(`${path}&per_page=${perPage}&page=${page}`)).body))
  return { ids: seen, total: first.body.meta.total }
}

interface Made {
  id: number
  live: boolean
  publishedAt: Date | null
  authorId: number | null
  termIds: number[]
}

/** C11 on the made entries. */
function listOrder(a: Made, b: Made): number {
  const ta = a.publishedAt?.getTime() ?? -Infinity
  const tb = b.publishedAt?.getTime() ?? -Infinity
  if (ta !== tb) return tb - ta
  return b.id - a.id
}

describe('C40–C43: lists filtered by term and author', () => {
  test('C40/C41/C43/C2: random sites, every filter: totals, page walks and cursor walks agree with the made entries; hidden carriers never count', async () => {
    const rng = random(40)
    for (let site = 0; site < 2; site++) {
      await clearContent(db.sql)
      const authors = [await addAuthor(db.sql, 'Ada'), await addAuthor(db.sql, 'Bo'), await addAuthor(db.sql, 'Cy')]
      const termsByKey = new Map<string, number>()
      for (const [taxonomy, slugs] of [['category', ['news', 'guides', 'drafts-only']], ['tag', ['bun', 'sql', 'css']]] as const) {
        for (const slug of slugs) termsByKey.set(`${taxonomy}:${slug}`, await addTerm(db.sql, taxonomy, slug))
      }
      const made: Made[] = []
      const shared = ago(5)
      for (let i = 0; i < 45; i++) {
        const kind = rng.pick(['live', 'live', 'live', 'undated', 'draft', 'embargoed', 'same-time'] as const)
        const publishedAt = kind === 'undated' ? null : kind === 'embargoed' ? new Date(Date.now() + 48 * HOUR) : kind === 'same-time' ? shared : ago(1 + Math.floor(rng.next() * 500))
        const status = kind === 'draft' ? rng.pick(['draft', 'scheduled'] as const) : 'published'
        // The third author writes drafts only: a filter by them is empty.
        const authorId = status !== 'published' ? rng.pick(authors) : rng.next() < 0.15 ? null : rng.pick(authors.slice(0, 2))
        const live = status === 'published' && kind !== 'embargoed'
        const termIds = [...termsByKey.entries()]
          .filter(([key]) => (key === 'category:drafts-only' ? !live : rng.next() < 0.4))
          .map(([, id]) => id)
        const id = await addEntry(db.sql, { status, publishedAt, authorId, termIds })
        made.push({ id, live, publishedAt, authorId, termIds })
      }
      const live = made.filter((entry) => entry.live).sort(listOrder)
      const filters: { query: string; keep: (entry: Made) => boolean }[] = []
      for (const [key, id] of termsByKey) filters.push({ query: `term=${key}`, keep: (entry) => entry.termIds.includes(id) })
      for (const author of [...authors, 999]) filters.push({ query: `author=${author}`, keep: (entry) => entry.authorId === author })
      filters.push({ query: 'term=category:news,tag:bun', keep: (entry) => entry.termIds.includes(termsByKey.get('category:news')!) && entry.termIds.includes(termsByKey.get('tag:bun')!) })
      filters.push({ query: `term=tag:sql&author=${authors[0]}`, keep: (entry) => entry.termIds.includes(termsByKey.get('tag:sql')!) && entry.authorId === authors[0] })
      filters.push({ query: `term=tag:css,category:guides,tag:sql&author=${authors[1]}`, keep: (entry) => ['tag:css', 'category:guides', 'tag:sql'].every((key) => entry.termIds.includes(termsByKey.get(key)!)) && entry.authorId === authors[1] })
      filters.push({ query: 'term=tag:nope', keep: () => false })
      filters.push({ query: 'term=nope:bun', keep: () => false })
      for (const filter of filters) {
        const expected = live.filter(filter.keep).map((entry) => entry.id)
        const perPage = 1 + Math.floor(rng.next() * 6)
        const byPage = await pages(`/api/v1/content/post?${filter.query}`, perPage)
        expect({ filter: filter.query, ids: byPage.ids, total: byPage.total }).toEqual({ filter: filter.query, ids: expected, total: expected.length })
        const byCursor = await walk(`/api/v1/content/post?${filter.query}&per_page=${perPage}`)
        expect({ filter: filter.query, ids: byCursor.ids }).toEqual({ filter: filter.query, ids: expected })
        expect(new Set(byCursor.totals)).toEqual(new Set([expected.length]))
      }
    }
  }, 60_000)

  test('C40: a term taxonomy:slug names a term of that taxonomy only; the same slug in another taxonomy does not count', async () => {
    const category = await addTerm(db.sql, 'category', 'Bun', 'bun')
    const tag = await addTerm(db.sql, 'tag', 'Bun', 'bun')
    const inCategory = await addEntry(db.sql, { termIds: [category] })
    const inTag = await addEntry(db.sql, { termIds: [tag] })
    expect(ids((await api.get('/api/v1/content/post?term=category:bun')).body)).toEqual([inCategory])
    expect(ids((await api.get('/api/v1/content/post?term=tag:bun')).body)).toEqual([inTag])
    expect(ids((await api.get('/api/v1/content/post?term=category:bun,tag:bun')).body)).toEqual([])
  })

  test('C40/C43: Link keeps the filters normalised (pairs in the order given, each once) and readable', async () => {
    const news = await addTerm(db.sql, 'category', 'News', 'news')
    const bun = await addTerm(db.sql, 'tag', 'Bun', 'bun')
    const author = await addAuthor(db.sql, 'Ada')
    for (let i = 0; i < 3; i++) await addEntry(db.sql, { authorId: author, termIds: [news, bun], publishedAt: ago(i + 1) })
    const response = await api.get(`/api/v1/content/post?per_page=1&author=${author}&term=tag:bun,category:news,tag:bun&page=2&unknown=1`)
    expect(response.status).toBe(200)
    const link = links(response.headers)
    expect(link.first).toBe(`${BASE}/api/v1/content/post?per_page=1&term=tag:bun,category:news&author=${author}`)
    expect(link.prev).toBe(link.first)
    expect(link.last).toBe(`${BASE}/api/v1/content/post?per_page=1&term=tag:bun,category:news&author=${author}&page=3`)
    expect(link.next).toStartWith(`${BASE}/api/v1/content/post?per_page=1&term=tag:bun,category:news&author=${author}&after=`)
  })

  test('C40/C41/C42: every malformed value is a 400 with its message, and no statement is sent', async () => {
    const termError = 'The term parameter must be a comma-separated list of taxonomy:slug pairs.'
    const cases: [string, string][] = [
      ['term=news', termError],
      ['term=:news', termError],
      ['term=category:', termError],
      ['term=', termError],
      ['term=category:news,', termError],
      ['term=category:news,,tag:bun', termError],
      [`term=${Array.from({ length: 11 }, (_, i) => `tag:t${i}`).join(',')}`, termError],
      ['author=0', 'The author parameter must be a positive integer.'],
      ['author=-1', 'The author parameter must be a positive integer.'],
      ['author=1.0', 'The author parameter must be a positive integer.'],
      ['author=', 'The author parameter must be a positive integer.'],
      ['author=0x10', 'The author parameter must be a positive integer.'],
      [`search=${'é'.repeat(201)}`, 'The search parameter must be at most 200 characters.'],
      ['order=relevance', 'The order parameter must be relevance or date.'],
      ['search=%20%20&order=relevance', 'The order parameter must be relevance or date.'],
      ['search=coffee&order=newest', 'The order parameter must be relevance or date.'],
      ['order=', 'The order parameter must be relevance or date.'],
    ]
    for (const [query, message] of cases) {
      api.statements.length = 0
      const response = await api.get(`/api/v1/content/post?${query}`)
      expect({ query, status: response.status, body: response.body }).toEqual({ query, status: 400, body: { error: message } })
      expect({ query, statements: api.statements }).toEqual({ query, statements: [] })
    }
    // At the limits: 10 pairs, 200 characters (an emoji is one), a blank search as if absent.
    expect((await api.get(`/api/v1/content/post?term=${Array.from({ length: 10 }, (_, i) => `tag:t${i}`).join(',')}`)).status).toBe(200)
    expect((await api.get(`/api/v1/content/post?search=${encodeURIComponent('☕'.repeat(200))}`)).status).toBe(200)
    expect((await api.get('/api/v1/content/post?search=%20&order=date')).status).toBe(200)
  })

  test('C41: an author with no live entries, and one that does not exist, give 200 with an empty list', async () => {
    const ghost = await addAuthor(db.sql, 'Ghost')
    await addEntry(db.sql, { authorId: ghost, status: 'draft' })
    await addEntry(db.sql, { authorId: ghost, publishedAt: new Date(Date.now() + 48 * HOUR) })
    for (const author of [ghost, 123456789]) {
      const response = await api.get(`/api/v1/content/post?author=${author}`)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ data: [], meta: { current_page: 1, last_page: 1, per_page: 20, total: 0 } })
    }
  })
})

describe('C40/C41/C18: kept filter counts', () => {
  /**
   * Each term's and author's live entries of each type, counted one by one; and what the list says. An
   * entry that went live between the count and the lists (a loaded machine stretches the rounds past
   * the go-lives) makes another, right, total: the check is made again then, never when none did.
   */
  async function checkTotals(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const [{ countedAt }] = await db.sql<{ countedAt: Date }[]>`select now() as "countedAt"`
      const mismatches = await totalsAgainstLists()
      if (mismatches.length === 0) break
      const [{ wentLive }] = await db.sql<{ wentLive: boolean }[]>`select exists (select 1 from entries where published_at > ${countedAt} and published_at <= now()) as "wentLive"`
      if (!wentLive || attempt === 5) expect(mismatches).toEqual([])
    }
    expect((await db.sql`select * from vitrine_live_filter_count_drift()`).length).toBe(0)
  }

  /** Where a list's total differs from the live entries counted one by one: `{ query, total, listed }`. */
  async function totalsAgainstLists(): Promise<{ query: string; total: number; listed: number }[]> {
    const expected = await db.sql<{ query: string; total: number }[]>`
      select 'term=' || x.slug || ':' || t.slug as query, (
        select count(*)::int
        from entries e
        where e.status = 'published' and (e.published_at is null or e.published_at <= now())
          and e.content_type_id = (select id from content_types where slug = 'post')
          and exists (select 1 from entry_terms et where et.entry_id = e.id and et.term_id = t.id)
      ) as total
      from terms t
      join taxonomies x on x.id = t.taxonomy_id
      union all
      select 'author=' || a.id, (
        select count(*)::int
        from entries e
        where e.status = 'published' and (e.published_at is null or e.published_at <= now())
          and e.content_type_id = (select id from content_types where slug = 'post')
          and e.author_id = a.id
      )
      from authors a
    `
    const mismatches = []
    for (const { query, total } of expected) {
      const response = await api.get(`/api/v1/content/post?${query}&per_page=1`)
      if (response.body.meta.total !== total) mismatches.push({ query, total, listed: response.body.meta.total })
    }
    return mismatches
  }

  test('C40/C41/C1: totals stay exact through random writes of every kind, and at go-lives without a write', async () => {
    const rng = random(41)
    const authors = [await addAuthor(db.sql, 'A'), await addAuthor(db.sql, 'B')]
    const terms = [await addTerm(db.sql, 'tag', 'One'), await addTerm(db.sql, 'tag', 'Two'), await addTerm(db.sql, 'category', 'Three')]
    const entries: number[] = []
    for (let i = 0; i < 30; i++) {
      entries.push(await addEntry(db.sql, { authorId: rng.pick(authors), termIds: terms.filter(() => rng.next() < 0.5), status: rng.pick(['published', 'published', 'draft'] as const) }))
    }
    const soon = () => new Date(Date.now() + 1500 + Math.floor(rng.next() * 1000))
    for (let round = 0; round < 40; round++) {
      const entry = rng.pick(entries)
      const term = rng.pick(terms)
      switch (rng.pick(['status', 'embargo', 'undate', 'author', 'add-term', 'remove-term', 'delete', 'insert', 'type', 'term-delete', 'bulk'] as const)) {
        case 'status':
          await db.sql`update entries set status = ${rng.pick(['published', 'draft', 'scheduled'])} where id = ${entry}`
          break
        case 'embargo':
          await db.sql`update entries set status = 'published', published_at = ${soon()} where id = ${entry}`
          break
        case 'undate':
          await db.sql`update entries set published_at = null where id = ${entry}`
          break
        case 'author':
          await db.sql`update entries set author_id = ${rng.next() < 0.2 ? null : rng.pick(authors)} where id = ${entry}`
          break
        case 'add-term':
          await db.sql`insert into entry_terms (entry_id, term_id) values (${entry}, ${term}) on conflict do nothing`
          break
        case 'remove-term':
          await db.sql`delete from entry_terms where entry_id = ${entry} and term_id = ${term}`
          break
        case 'delete':
          await db.sql`delete from entries where id = ${entry}`
          entries.splice(entries.indexOf(entry), 1)
          entries.push(await addEntry(db.sql, { authorId: rng.pick(authors), termIds: [term] }))
          break
        case 'insert':
          entries.push(await addEntry(db.sql, { authorId: rng.pick(authors), termIds: terms.filter(() => rng.next() < 0.5), publishedAt: rng.next() < 0.5 ? soon() : null }))
          break
        case 'type':
          await db.sql`update entries set content_type_id = (select id from content_types where slug = ${rng.pick(['page', 'post'])}) where id = ${entry}`
          break
        case 'term-delete':
          // A term deleted (its entry_terms go by cascade), then one like it made again.
          await db.sql`delete from terms where id = ${term}`
          terms[terms.indexOf(term)] = await addTerm(db.sql, 'tag', `Again ${round}`)
          break
        case 'bulk':
          await db.sql`update entries set published_at = now() - interval '1 hour', status = 'published' where id in ${db.sql(entries.slice(0, 10))}`
          break
      }
      if (round % 10 === 9) await checkTotals()
    }
    // Every embargo set above has gone live by now, with no write.
    await Bun.sleep(2600)
    await checkTotals()
    // Rows of many writes fold into one per term and kind of date.
    const [{ rows }] = await db.sql<{ rows: number }[]>`select count(*)::int as rows from live_filter_count_deltas where live_from <= now() - interval '1 second'`
    expect(rows).toBeGreaterThan(0)
  }, 60_000)

  test('C40/C41: TRUNCATE of entry_terms and of entries, and a repair after writes with the triggers off', async () => {
    const author = await addAuthor(db.sql, 'A')
    const term = await addTerm(db.sql, 'tag', 'One')
    for (let i = 0; i < 3; i++) await addEntry(db.sql, { authorId: author, termIds: [term] })
    await db.sql`truncate entry_terms`
    await checkTotals()
    await db.sql`insert into entry_terms (entry_id, term_id) select id, ${term} from entries`
    await checkTotals()
    await writeUnheard(db.sql, (tx) => tx`delete from entry_terms where entry_id = (select min(id) from entries)`)
    expect((await db.sql`select * from vitrine_live_filter_count_drift()`).length).toBe(1)
    // The service's check finds it, and counts the type's filtered entries one by one meanwhile: still exact.
    const checked = testApp(db.url, {}, undefined, undefined, { liveCountCheck: true })
    try {
      expect((await checked.get('/api/v1/content/post?term=tag:one')).body.meta.total).toBe(3)
      await checked.liveCounts!.check()
      expect(checked.liveCounts!.countByScan('post')).toBe(true)
      expect(checked.logs.some((line) => line.includes('"filter":"term:'))).toBe(true)
      expect((await checked.get('/api/v1/content/post?term=tag:one')).body.meta.total).toBe(2)
      expect((await checked.get(`/api/v1/content/post?term=tag:one&author=${author}`)).body.meta.total).toBe(2)
      await db.sql`select vitrine_repair_live_entry_counts()`
      await checked.liveCounts!.check()
      expect(checked.liveCounts!.countByScan('post')).toBe(false)
    } finally {
      await checked.close()
    }
    await checkTotals()
    await db.sql`truncate entries cascade`
    expect((await db.sql`select * from live_filter_count_deltas`).length).toBe(0)
  })
})

describe('C42: search', () => {
  test('C42/C14: matches the shown translation with its language configuration; stems; ranks title over excerpt over body; order=date is list order', async () => {
    const inBody = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Morning', slug: 'a', excerpt: 'A start', body: 'We brewed coffee all day.' } } })
    const inExcerpt = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Noon', slug: 'b', excerpt: 'Coffees compared', body: null } } })
    const inTitle = await addEntry(db.sql, { publishedAt: ago(3), translations: { en: { title: 'Coffee at dawn', slug: 'c', excerpt: null } } })
    // "coffee" is not "coffeehouse": full-text search matches words, not substrings; as the last word
    // typed, "coffee" is also a prefix (C55): the match ranks after every exact one.
    const prefixOnly = await addEntry(db.sql, { publishedAt: ago(4), translations: { en: { title: 'The Coffeehouse', slug: 'd' } } })
    // Hidden entries that match are never found or counted (C2).
    await addEntry(db.sql, { status: 'draft', translations: { en: { title: 'Coffee draft', slug: 'e' } } })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + 48 * HOUR), translations: { en: { title: 'Coffee soon', slug: 'f' } } })
    // French: its own translation, its own stemming ("cafés" finds "café"); an entry with no French row is searched in English.
    const french = await addEntry(db.sql, { publishedAt: ago(5), translations: { en: { title: 'Tea', slug: 'g' }, fr: { title: 'Les cafés de Paris', slug: 'g-fr' } } })
    // Shown in French: its English title does not match a French search.
    const english = await addEntry(db.sql, { publishedAt: ago(6), translations: { en: { title: 'Coffee in English', slug: 'h' }, fr: { title: 'Thé', slug: 'h-fr' } } })

    const ranked = await api.get('/api/v1/content/post?search=coffee')
    expect(ranked.status).toBe(200)
    // Two matches in a title rank alike: list order between them (C11).
    expect(ids(ranked.body)).toEqual([inTitle, english, inExcerpt, inBody, prefixOnly])
    expect(ranked.body.meta.total).toBe(5)
    const words = await api.get('/api/v1/content/post?search=coffee%20')
    expect(ids(words.body)).toEqual([inTitle, english, inExcerpt, inBody])
    const byDate = await api.get('/api/v1/content/post?search=coffee%20&order=date')
    expect(ids(byDate.body).slice(0, 3)).toEqual([inBody, inExcerpt, inTitle])

    const fr = await api.get(`/api/v1/content/post?lang=fr&search=${encodeURIComponent('café')}`)
    expect(ids(fr.body)).toEqual([french])
    // The English-only entries are shown in English under lang=fr (C14), and searched so.
    const fallback = await api.get('/api/v1/content/post?lang=fr&search=coffee%20&order=date')
    expect(ids(fallback.body)).toEqual([inBody, inExcerpt, inTitle])
  })

  test('C42: websearch syntax: "quoted phrases", or, -word; stop words alone find nothing', async () => {
    const a = await addEntry(db.sql, { publishedAt: ago(1), translations: { en: { title: 'Fast cache misses', slug: 'a' } } })
    const b = await addEntry(db.sql, { publishedAt: ago(2), translations: { en: { title: 'Cache misses are fast', slug: 'b' } } })
    const c = await addEntry(db.sql, { publishedAt: ago(3), translations: { en: { title: 'Slow queries', slug: 'c' } } })
    const found = async (search: string) => ids((await api.get(`/api/v1/content/post?order=date&search=${encodeURIComponent(search)}`)).body)
    expect(await found('"fast cache"')).toEqual([a])
    expect(await found('cache -fast')).toEqual([])
    expect(await found('slow or fast')).toEqual([a, b, c])
    expect(await found('the')).toEqual([])
  })

  test('C42/C39: a walk by relevance with cursors gives exactly the pages by number, ties in list order', async () => {
    const rng = random(42)
    const words = ['bun', 'sql', 'cache', 'edge']
    for (let i = 0; i < 40; i++) {
      const title = words.filter(() => rng.next() < 0.5).join(' ') || 'nothing'
      const body = words.filter(() => rng.next() < 0.3).join(' ')
      await addEntry(db.sql, { publishedAt: rng.next() < 0.2 ? null : ago(1 + Math.floor(rng.next() * 5)), translations: { en: { title, slug: `s${i}`, body } } })
    }
    for (const search of ['bun', 'cache or edge', 'sql bun']) {
      for (const order of ['', '&order=date']) {
        const path = `/api/v1/content/post?search=${encodeURIComponent(search)}${order}`
        const byPage = await pages(path, 3)
        const byCursor = await walk(`${path}&per_page=3`)
        expect({ search, order, ids: byCursor.ids }).toEqual({ search, order, ids: byPage.ids })
        expect(byPage.ids.length).toBe(byPage.total)
      }
    }
    // A cursor continues its own order only.
    const relevance = links((await api.get('/api/v1/content/post?search=bun&per_page=1')).headers).next!
    const after = new URL(relevance).searchParams.get('after')!
    const crossed = await api.get(`/api/v1/content/post?search=bun&order=date&per_page=1&after=${after}`)
    expect(crossed.status).toBe(400)
    expect(crossed.body).toEqual({ error: 'The after parameter is not a valid cursor.' })
  }, 60_000)
})

describe('C43/C36: the cache keeps filtered answers apart and fresh', () => {
  test('C36/C43: a term added to an entry and an author changed by an outside writer reach the filtered lists at once', async () => {
    const cached = await cachedTestApp(db.url)
    try {
      const term = await addTerm(db.sql, 'tag', 'Bun')
      const [ada, bo] = [await addAuthor(db.sql, 'Ada'), await addAuthor(db.sql, 'Bo')]
      const entry = await addEntry(db.sql, { authorId: ada })
      const byTerm = '/api/v1/content/post?term=tag:bun'
      const byAuthor = `/api/v1/content/post?author=${bo}`
      // The set-up's own notifications have arrived: none can drop an answer below.
      const barrier = cached.nextChange('test_barrier')
      await db.sql`select pg_notify('vitrine_changes', 'test_barrier:*')`
      await barrier
      expect((await cached.get(byTerm)).body.meta.total).toBe(0)
      const hit = await cached.get(byTerm)
      expect(hit.headers.get('x-cache')).toBe('HIT')
      expect((await cached.get(byAuthor)).body.meta.total).toBe(0)
      // Different filters are different answers.
      expect((await cached.get(`/api/v1/content/post?author=${ada}`)).body.meta.total).toBe(1)

      let changed = cached.nextChange('entry_terms')
      await db.sql`insert into entry_terms (entry_id, term_id) values (${entry}, ${term})`
      await changed
      const fresh = await cached.get(byTerm)
      expect([fresh.headers.get('x-cache'), ids(fresh.body)]).toEqual(['MISS', [entry]])

      changed = cached.nextChange('entries')
      await db.sql`update entries set author_id = ${bo} where id = ${entry}`
      await changed
      expect(ids((await cached.get(byAuthor)).body)).toEqual([entry])
      expect((await cached.get(`/api/v1/content/post?author=${ada}`)).body.meta.total).toBe(0)

      // A term renamed: its slug in the filter now names nothing.
      changed = cached.nextChange('terms')
      await db.sql`update terms set slug = 'bun-js' where id = ${term}`
      await changed
      expect((await cached.get(byTerm)).body.meta.total).toBe(0)
      expect(ids((await cached.get('/api/v1/content/post?term=tag:bun-js')).body)).toEqual([entry])
    } finally {
      await cached.close()
    }
  })
})
