import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { t } from '../src/hooks/extension'
import { FilterRegistry } from '../src/hooks/registry'
import { NextGoLives } from '../src/cache/next-go-lives'
import { cachedTestApp } from './support/cached-app'
import { testApp } from './support/app'
import { createTestDatabase } from './support/database'
import { databaseClockPassed } from './support/database-clock'
import { addAuthor, addEntry, addImage, addLanguage, addTerm, clearContent } from './support/fixtures'
import { startService } from './support/service'

/**
 * The service's cache and HTTP caching (C32–C38), with the cache on, against
 * a real PostgreSQL whose own triggers notify every write.
 */
const db = await createTestDatabase()
await addLanguage(db.sql, 'fr', 'Français')
const api = await cachedTestApp(db.url)
const uncached = testApp(db.url)
afterAll(async () => {
  await api.close()
  await uncached.close()
  await db.sql.end()
})
beforeEach(async () => {
  const cleared = api.nextChange('entries')
  await clearContent(db.sql)
  await cleared
})

const LIST = '/api/v1/content/post'
const titles = (body: any) => body.data.map((item: any) => item.title)

/**
 * Waits until the listener has heard every write committed so far: notifications
 * arrive in commit order, so once a last one of our own is in, all are.
 */
async function settled(app = api) {
  const barrier = app.nextChange('test_barrier')
  await db.sql`select pg_notify('vitrine_changes', 'test_barrier:*')`
  await barrier
}

/** A request, then the same request again: the second must come from memory. */
async function warm(path: string) {
  await settled()
  const first = await api.get(path)
  const second = await api.get(path)
  expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
  return second
}

describe('C35: answers from memory, byte-identical to the database', () => {
  test('a repeated request is a HIT with Age, and the same bytes and ETag as the MISS and as an uncached service', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' } } })
    await settled()
    for (const path of [LIST, `${LIST}/hello`, `${LIST}/nope`, '/api/v1/content/nope', `${LIST}?lang=fr&per_page=5`]) {
      const miss = await api.get(path)
      const hit = await api.get(path)
      const plain = await uncached.get(path)
      expect([path, hit.headers.get('x-cache'), hit.headers.get('age')]).toEqual([path, 'HIT', expect.stringMatching(/^\d+$/)])
      expect([hit.status, hit.text, hit.headers.get('etag')]).toEqual([miss.status, miss.text, miss.headers.get('etag')])
      expect([plain.status, plain.text, plain.headers.get('etag'), plain.headers.get('x-cache')]).toEqual([miss.status, miss.text, miss.headers.get('etag'), 'BYPASS'])
    }
  })

  test('an unknown lang resolves to the default language and shares its answer (C9)', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' } } })
    await warm(LIST)
    const unknown = await api.get(`${LIST}?lang=xx`)
    expect([unknown.headers.get('x-cache'), titles(unknown.body)]).toEqual(['HIT', ['Hello']])
  })

  test('C37: concurrent misses of one key run one statement', async () => {
    await addEntry(db.sql)
    await settled()
    api.statements.length = 0
    const answers = await Promise.all(Array.from({ length: 20 }, () => api.get(`${LIST}?per_page=7`)))
    expect(new Set(answers.map((answer) => answer.text)).size).toBe(1)
    expect(api.statements).toHaveLength(1)
  })
})

describe('C36: every outside write shows on the next request after its notification', () => {
  const cases: [string, string, (ids: { entry: number; author: number; term: number; image: number }) => Promise<unknown>, (body: any) => unknown][] = [
    ['a translation', 'entry_translations', ({ entry }) => db.sql`update entry_translations set title = 'Changed' where entry_id = ${entry}`, (body) => body.data[0].title],
    ['an entry made a draft', 'entries', ({ entry }) => db.sql`update entries set status = 'draft' where id = ${entry}`, (body) => body.meta.total],
    ['an entry dated in the future', 'entries', ({ entry }) => db.sql`update entries set published_at = now() + interval '1 day' where id = ${entry}`, (body) => body.meta.total],
    ['an entry deleted', 'entries', ({ entry }) => db.sql`delete from entries where id = ${entry}`, (body) => body.meta.total],
    ['an entry inserted', 'entries', () => addEntry(db.sql, { translations: { en: { slug: 'new' } } }), (body) => body.meta.total],
    ['an author renamed', 'authors', ({ author }) => db.sql`update authors set name = 'Renamed' where id = ${author}`, (body) => body.data[0].author.name],
    ['a term renamed', 'terms', ({ term }) => db.sql`update terms set name = 'Renamed' where id = ${term}`, (body) => body.data[0].terms[0].name],
    ['a term taken off the entry', 'entry_terms', ({ entry }) => db.sql`delete from entry_terms where entry_id = ${entry}`, (body) => body.data[0].terms.length],
    ['an image moved', 'media', ({ image }) => db.sql`update media set path = 'uploads/moved.jpg' where id = ${image}`, (body) => body.data[0].featured_image.url],
    ['an image variant generated', 'media_variants', ({ image }) => db.sql`insert into media_variants (media_id, name, path) values (${image}, 'thumbnail', 'uploads/thumb.jpg')`, (body) => body.data[0].featured_image.thumbnail],
    ['TRUNCATE', 'entries', () => db.sql`truncate entries cascade`, (body) => body.meta.total],
  ]
  for (const [what, table, write, observe] of cases) {
    test(`${what} (${table})`, async () => {
      const ids = {
        author: await addAuthor(db.sql, 'Ada'),
        term: await addTerm(db.sql, 'tag', 'News'),
        image: await addImage(db.sql, 'uploads/cat.jpg'),
        entry: 0,
      }
      ids.entry = await addEntry(db.sql, { authorId: ids.author, imageId: ids.image, termIds: [ids.term], translations: { en: { slug: 'hello', title: 'Hello' } } })
      const before = observe((await warm(LIST)).body)
      const notified = api.nextChange(table)
      await write(ids)
      await notified
      const after = await api.get(LIST)
      expect(after.headers.get('x-cache')).toBe('MISS')
      expect(observe(after.body)).not.toEqual(before)
      expect(after.text).toBe((await uncached.get(LIST)).text)
    })
  }

  test('the default language changed (languages)', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Hello' }, fr: { slug: 'bonjour', title: 'Bonjour' } } })
    expect(titles((await warm(LIST)).body)).toEqual(['Hello'])
    const notified = api.nextChange('languages')
    await db.sql.begin(async (tx) => {
      await tx`update languages set is_default = false where code = 'en'`
      await tx`update languages set is_default = true where code = 'fr'`
    })
    await notified
    try {
      expect(titles((await api.get(LIST)).body)).toEqual(['Bonjour'])
    } finally {
      const back = api.nextChange('languages')
      await db.sql.begin(async (tx) => {
        await tx`update languages set is_default = false where code = 'fr'`
        await tx`update languages set is_default = true where code = 'en'`
      })
      await back
    }
  })

  test('a content type renamed (content_types): the old name is unknown, the new one serves', async () => {
    await addEntry(db.sql, { type: 'story', translations: { en: { slug: 'once' } } })
    await warm('/api/v1/content/story')
    await warm('/api/v1/content/tale')
    const notified = api.nextChange('content_types')
    await db.sql`update content_types set slug = 'tale' where slug = 'story'`
    await notified
    try {
      expect((await api.get('/api/v1/content/story')).body).toEqual({ error: 'Content type not found.' })
      expect((await api.get('/api/v1/content/tale')).body.meta.total).toBe(1)
    } finally {
      await db.sql`update content_types set slug = 'story' where slug = 'tale'`
    }
  })

  test('a write in a long transaction shows nothing before its commit, and everything after its notification', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Before' } } })
    await warm(LIST)
    const writer = await db.sql.reserve()
    try {
      await writer`begin`
      await writer`update entry_translations set title = 'After' where entry_id = ${entry}`
      // Not committed: the cached answer and the database agree on 'Before'.
      expect(titles((await api.get(LIST)).body)).toEqual(['Before'])
      expect(titles((await uncached.get(LIST)).body)).toEqual(['Before'])
      const notified = api.nextChange('entry_translations')
      await writer`commit`
      await notified
      expect(titles((await api.get(LIST)).body)).toEqual(['After'])
    } finally {
      writer.release()
    }
  })

  test('a writer and readers at once: no answer computed before a commit is served once its notification is in', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'v0' } } })
    await settled()
    let notifiedVersion = 0
    let done = false
    const stale: string[] = []
    const reader = async () => {
      while (!done) {
        // A HIT never waits for I/O: yield, or the readers would starve the writer (clients come over a network).
        await Bun.sleep(0)
        // The version whose notification had arrived when this request started.
        const atLeast = notifiedVersion
        const [one, list] = await Promise.all([api.get(`${LIST}/hello`), api.get(LIST)])
        for (const seen of [one.body.data.title, list.body.data[0].title]) {
          if (Number(seen.slice(1)) < atLeast) stale.push(`saw ${seen} after v${atLeast} was notified`)
        }
      }
    }
    const readers = [reader(), reader(), reader(), reader()]
    for (let version = 1; version <= 30; version++) {
      const notified = api.nextChange('entry_translations')
      await db.sql`update entry_translations set title = ${`v${version}`} where entry_id = ${entry}`
      await notified
      notifiedVersion = version
    }
    done = true
    await Promise.all(readers)
    expect(stale).toEqual([])
    expect((await api.get(`${LIST}/hello`)).body.data.title).toBe('v30')
  })

  test('an embargoed entry appears at its time with no write, while the list is cached; max-age stops at it', async () => {
    const [{ at }] = await db.sql<{ at: Date }[]>`select now() + interval '3 seconds' as at`
    await addEntry(db.sql, { translations: { en: { slug: 'live' } } })
    await addEntry(db.sql, { publishedAt: at, translations: { en: { slug: 'soon' } } })
    const capped = await cachedTestApp(db.url, { CACHE_MAX_AGE: '300' })
    try {
      await settled(capped)
      const cached = await capped.get(LIST)
      expect(cached.body.meta.total).toBe(1)
      // Capped by the go-live, 3 s away at most, not CACHE_MAX_AGE's 300.
      expect(cached.headers.get('cache-control')).toMatch(/^public, (max-age=[1-3]|no-cache)$/)
      expect((await capped.get(LIST)).headers.get('x-cache')).toBe('HIT')
      // Wait for the database's clock, not ours.
      await databaseClockPassed(db.sql, at)
      const after = await capped.get(LIST)
      expect([after.headers.get('x-cache'), after.body.meta.total]).toEqual(['MISS', 2])
      expect(after.headers.get('cache-control')).toBe('public, max-age=300')
      expect((await capped.get(`${LIST}/soon`)).status).toBe(200)
    } finally {
      await capped.close()
    }
  })
})

describe('C36: a type\'s next go-live, read again only after a write to the type or once it has come (issue 45)', () => {
  /** The statements of the content routes that read their type's next go-live. */
  const GO_LIVE = 'min(e.published_at) - now()'
  const readGoLive = (app: { statements: string[] }) => app.statements.filter((text) => text.includes('from entry_translations t') && text.includes(GO_LIVE)).length

  test('the first answer of a type reads it; the next of that type, entries and lists, do not; the answers kept still expire at it', async () => {
    const [{ at }] = await db.sql<{ at: Date }[]>`select now() + interval '3 seconds' as at`
    await addEntry(db.sql, { translations: { en: { slug: 'one' } } })
    await addEntry(db.sql, { translations: { en: { slug: 'two' } } })
    await addEntry(db.sql, { type: 'page', translations: { en: { slug: 'about' } } })
    await addEntry(db.sql, { publishedAt: at, translations: { en: { slug: 'soon' } } })
    const app = await cachedTestApp(db.url)
    try {
      await settled(app)
      app.statements.length = 0
      for (const slug of ['one', 'two', 'missing']) expect([slug, (await app.get(`${LIST}/${slug}`)).headers.get('x-cache')]).toEqual([slug, 'MISS'])
      expect([readGoLive(app), app.goLives!.size]).toEqual([1, 1])
      // The type's list knows it too.
      const list = await app.get(LIST)
      expect([list.body.meta.total, readGoLive(app), app.statements.length]).toEqual([2, 1, 4])
      // Another type reads its own.
      await app.get('/api/v1/content/page/about')
      expect(readGoLive(app)).toBe(2)
      // Kept until the go-live: the answers that did not read it expire at it all the same.
      expect([(await app.get(`${LIST}/one`)).headers.get('x-cache'), (await app.get(LIST)).headers.get('x-cache')]).toEqual(['HIT', 'HIT'])
      await databaseClockPassed(db.sql, at)
      const after = await app.get(`${LIST}/soon`)
      // Once it has come, it is read again: the next one is none.
      expect([after.status, readGoLive(app)]).toEqual([200, 3])
      const [one, again] = [await app.get(`${LIST}/one`), await app.get(LIST)]
      expect([one.headers.get('x-cache'), again.headers.get('x-cache'), again.body.meta.total, readGoLive(app)]).toEqual(['MISS', 'MISS', 3, 3])
    } finally {
      await app.close()
    }
  })

  test('a write to the type makes the next answer read it again', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'one' } } })
    await addEntry(db.sql, { translations: { en: { slug: 'two' } } })
    const later = await addEntry(db.sql, { translations: { en: { slug: 'later' } } })
    const app = await cachedTestApp(db.url)
    try {
      await settled(app)
      app.statements.length = 0
      await app.get(`${LIST}/one`)
      expect([readGoLive(app), app.goLives!.size]).toEqual([1, 1])
      // One statement of one table: a notification that names the type alone.
      const heard = app.nextChange('entries')
      await db.sql`update entries set published_at = now() + interval '40 seconds' where id = ${later}`
      expect((await heard).typeIds).not.toBe('all')
      expect(app.goLives!.size).toBe(0)
      await app.get(`${LIST}/two`)
      expect(readGoLive(app)).toBe(2)
    } finally {
      await app.close()
    }
  })

  test('C33: with a CACHE_MAX_AGE nothing is remembered: a max-age, once sent, cannot be taken back when a write is heard', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'one' } } })
    await addEntry(db.sql, { translations: { en: { slug: 'two' } } })
    await addEntry(db.sql, { publishedAt: new Date(Date.now() + 40_000), translations: { en: { slug: 'later' } } })
    const capped = await cachedTestApp(db.url, { CACHE_MAX_AGE: '300' })
    try {
      await settled(capped)
      capped.statements.length = 0
      for (const path of [`${LIST}/one`, `${LIST}/two`, LIST]) expect([path, (await capped.get(path)).headers.get('cache-control')]).toEqual([path, expect.stringMatching(/^public, max-age=(39|40)$/)])
      expect([readGoLive(capped), capped.goLives]).toEqual([3, undefined])
    } finally {
      await capped.close()
    }
  })

  test('what the lost listener may have missed is forgotten; nothing is remembered while it is lost, nor from a statement that ran while a write was heard', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'one' } } })
    const app = await cachedTestApp(db.url)
    try {
      await settled(app)
      await app.get(`${LIST}/one`)
      expect(app.goLives!.size).toBe(1)
      const lost = app.nextLost()
      const back = app.nextListening()
      await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine-listener' and datname = current_database()`
      await lost
      expect(app.goLives!.size).toBe(0)
      await back
    } finally {
      await app.close()
    }
    const goLives = new NextGoLives(100)
    // Not listening yet: a write could go unheard.
    goLives.before('post').settle(1, null)
    expect(goLives.size).toBe(0)
    goLives.onListening()
    // A statement read before a write was heard may predate it: what it found is not kept.
    const read = goLives.before('post')
    goLives.onChange({ table: 'entries', typeIds: new Set([1]) })
    expect(read.settle(1, 12)).toBe(12)
    expect(goLives.size).toBe(0)
    goLives.before('post').settle(1, 30)
    goLives.before('page').settle(2, null)
    const [post, page] = [goLives.before('post'), goLives.before('page')]
    expect([post.read, post.settle(1, null), page.read, page.settle(2, 99)]).toEqual([false, expect.closeTo(30, 0), false, null])
    // A write to the type heard while a statement that used it ran: that answer is true until now only.
    const during = goLives.before('post')
    goLives.onChange({ table: 'entries', typeIds: new Set([1]) })
    expect([during.read, during.settle(1, null), goLives.before('post').read]).toEqual([false, 0, true])
    // The type the slug names now is not the one remembered: the same, and it is forgotten.
    goLives.before('post').settle(1, 30)
    expect([goLives.before('post').settle(7, null), goLives.before('post').read]).toEqual([0, true])
    // A write names the types it changed: only theirs are forgotten; a type not found is never kept.
    goLives.before('post').settle(1, 30)
    goLives.onChange({ table: 'entries', typeIds: new Set([1]) })
    goLives.before('nothing').settle(null, null)
    expect([goLives.before('post').read, goLives.before('page').read, goLives.size]).toEqual([true, false, 1])
    // Trusted for a while only, whatever its moment.
    await Bun.sleep(120)
    expect([goLives.before('page').read, goLives.size]).toEqual([true, 0])
    goLives.before('page').settle(2, null)
    goLives.onChange({ table: 'content_types', typeIds: 'all' })
    expect(goLives.size).toBe(0)
  })
})

describe('two processes on one database', () => {
  test('bun run start twice: both serve from memory, and both drop what a write changed', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Before' } } })
    const services = await Promise.all([startService({ DATABASE_URL: db.url, PORT: '0' }), startService({ DATABASE_URL: db.url, PORT: '0' })])
    try {
      // Each process listens before it serves from memory: wait until both answer a HIT.
      for (const service of services) {
        for (let attempt = 0; (await fetch(service.url + LIST)).headers.get('x-cache') !== 'HIT'; attempt++) {
          if (attempt > 100) throw new Error(`${service.url} never answered from memory`)
          await Bun.sleep(20)
        }
      }
      await db.sql`update entry_translations set title = 'After' where entry_id = ${entry}`
      for (const service of services) {
        // The notification reaches each process on its own connection; the test cannot see it arrive, so it asks until the answer changes.
        let title = 'Before'
        for (let attempt = 0; title === 'Before' && attempt < 250; attempt++) {
          title = titles(await (await fetch(service.url + LIST)).json())[0]
          if (title === 'Before') await Bun.sleep(20)
        }
        expect([service.url, title]).toEqual([service.url, 'After'])
      }
    } finally {
      for (const service of services) await service.stop()
    }
  })
})

describe('C35, as a property: cached answers are byte-identical to uncached ones', () => {
  test('random content, every list page and slug, in every language: MISS, HIT and an uncached service agree', async () => {
    let seed = 7
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    const author = await addAuthor(db.sql, 'Ada')
    const term = await addTerm(db.sql, 'tag', 'News')
    const slugs: string[] = []
    for (let i = 0; i < 25; i++) {
      const translations: Record<string, { slug: string; title: string }> = {}
      if (random() < 0.8) translations.en = { slug: `en-${i}`, title: `English ${i}` }
      if (random() < 0.5) translations.fr = { slug: `fr-${i}`, title: `Français ${i}` }
      slugs.push(...Object.values(translations).map((t) => t.slug))
      const status = random() < 0.8 ? 'published' : 'draft'
      const publishedAt = random() < 0.1 ? null : new Date(Date.now() + (random() < 0.15 ? 3_600_000 : -random() * 1e9))
      await addEntry(db.sql, { status, publishedAt, authorId: random() < 0.5 ? author : null, termIds: random() < 0.5 ? [term] : [], translations })
    }
    await settled()
    const paths = [...[1, 2, 3, 4].map((page) => `${LIST}?per_page=7&page=${page}`), ...slugs.map((slug) => `${LIST}/${slug}`)]
    for (const lang of ['', 'fr', 'xx']) {
      for (const path of paths) {
        const url = lang ? `${path}${path.includes('?') ? '&' : '?'}lang=${lang}` : path
        const [miss, hit, plain] = [await api.get(url), await api.get(url), await uncached.get(url)]
        expect([url, hit.headers.get('x-cache')]).toEqual([url, 'HIT'])
        expect([url, miss.status, hit.text, plain.text, hit.headers.get('etag')]).toEqual([url, plain.status, miss.text, miss.text, plain.headers.get('etag')])
      }
    }
  })
})

describe('while the listening connection is down, the cache is bypassed', () => {
  test('listener terminated: BYPASS, then MISS and HIT again once it listens again, with nothing stale', async () => {
    const entry = await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Before' } } })
    await warm(LIST)
    const lost = api.nextLost()
    const back = api.nextListening()
    await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'vitrine-listener' and datname = current_database()`
    await lost
    // Written while nobody listens: no notification will ever say so.
    await db.sql`update entry_translations set title = 'After' where entry_id = ${entry}`
    const bypassed = await api.get(LIST)
    if (bypassed.headers.get('x-cache') === 'BYPASS') expect(titles(bypassed.body)).toEqual(['After'])
    await back
    const fresh = await api.get(LIST)
    expect([fresh.headers.get('x-cache'), titles(fresh.body)]).toEqual(['MISS', ['After']])
    expect((await api.get(LIST)).headers.get('x-cache')).toBe('HIT')
  })
})

describe('C32: ETag and If-None-Match', () => {
  test('a matching If-None-Match is a 304 with ETag, Cache-Control, Vary-free headers and no body, for GET and HEAD', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    for (const path of [LIST, `${LIST}/hello`, `${LIST}/nope`]) {
      const first = await api.get(path)
      const etag = first.headers.get('etag')!
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/)
      for (const [method, header] of [['GET', etag], ['HEAD', etag], ['GET', '*'], ['GET', `"other", W/${etag}`], ['GET', `W/${etag}`]] as const) {
        const conditional = await api.get(path, { method, headers: { 'if-none-match': header } })
        expect([path, method, header, conditional.status, conditional.text]).toEqual([path, method, header, 304, ''])
        expect(conditional.headers.get('etag')).toBe(etag)
        expect(conditional.headers.get('cache-control')).toBe('public, no-cache')
        expect(conditional.headers.get('x-request-id')).toBeTruthy()
        expect(conditional.headers.get('access-control-allow-origin')).toBe('*')
      }
      expect((await api.get(path, { headers: { 'if-none-match': '"stale"' } })).status).toBe(first.status)
    }
  })

  test('C34/C51: Surrogate-Key names the type and every item, lists-{slug} where which entries are live matters, vitrine always; X-Cache says where the answer came from', async () => {
    const a = await addEntry(db.sql, { translations: { en: { slug: 'a' } } })
    const b = await addEntry(db.sql, { translations: { en: { slug: 'b' } } })
    await addEntry(db.sql, { status: 'draft', translations: { en: { slug: 'secret' } } })
    const list = await api.get(LIST)
    expect(list.headers.get('surrogate-key')).toBe(`type-post lists-post entry-${b} entry-${a} vitrine`)
    expect((await api.get(`${LIST}/a`)).headers.get('surrogate-key')).toBe(`type-post entry-${a} vitrine`)
    // A write that makes it live names no key of this answer but lists-post.
    expect((await api.get(`${LIST}/secret`)).headers.get('surrogate-key')).toBe('type-post lists-post vitrine')
    // A header holds Latin-1: a type named in another script is percent-encoded in its tag, never a 500.
    const japanese = await api.get('/api/v1/content/%E6%97%A5%E6%9C%AC')
    expect([japanese.status, japanese.body, japanese.headers.get('surrogate-key')]).toEqual([404, { error: 'Content type not found.' }, 'type-%E6%97%A5%E6%9C%AC lists-%E6%97%A5%E6%9C%AC vitrine'])
    expect((await api.get('/api/v1/content/a%20b')).headers.get('surrogate-key')).toBe('type-a%20b lists-a%20b vitrine')
  })

  test('C33: 400 and 405 answers may be kept CACHE_MAX_AGE; 5xx never, and the service does not keep them', async () => {
    expect((await api.get(`${LIST}?page=0`)).headers.get('cache-control')).toBe('public, max-age=0')
    expect((await api.get(LIST, { method: 'DELETE' })).headers.get('cache-control')).toBe('public, max-age=0')
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    let calls = 0
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data) => {
      if (++calls === 1) throw new Error('first call fails')
      return data
    })
    const flaky = await cachedTestApp(db.url, { CACHE_MAX_AGE: '60' }, filters)
    try {
      await settled(flaky)
      const failed = await flaky.get(`${LIST}/hello`)
      expect([failed.status, failed.headers.get('cache-control')]).toEqual([500, 'no-store'])
      const served = await flaky.get(`${LIST}/hello`)
      expect([served.status, served.headers.get('cache-control')]).toEqual([200, 'public, max-age=60'])
    } finally {
      await flaky.close()
    }
  })
})

describe('C38 (revised): the chain\'s output is kept per variant of what it read', () => {
  /** Removes the excerpt for readers without X-Member; counts its runs. */
  function membersOnly() {
    const counter = { calls: 0 }
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data, _content, context) => {
      counter.calls++
      if (context.request.headers.has('x-member')) return data
      const { excerpt: _excerpt, ...rest } = data
      return rest
    }, { schema: { remove: ['excerpt'] } })
    return { filters, counter }
  }

  test('one chain run per value of what it read: a kept variant is the same bytes, ETag and Vary as the chain gives, from no statement', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', excerpt: 'members only' } } })
    const { filters, counter } = membersOnly()
    const hooked = await cachedTestApp(db.url, {}, filters)
    const fresh = testApp(db.url, {}, filters)
    try {
      await settled(hooked)
      hooked.statements.length = 0
      const anonymous = await hooked.get(`${LIST}/hello`)
      const member = await hooked.get(`${LIST}/hello`, { headers: { 'x-member': '1' } })
      const again = await hooked.get(`${LIST}/hello`)
      const memberAgain = await hooked.get(`${LIST}/hello`, { headers: { 'x-member': 'yes' } })
      expect([anonymous, member, again, memberAgain].map((response) => response.headers.get('x-cache'))).toEqual(['MISS', 'HIT', 'HIT', 'HIT'])
      expect(hooked.statements).toHaveLength(1)
      // has() reads presence only: 'yes' and '1' share a variant.
      expect(counter.calls).toBe(2)
      expect('excerpt' in anonymous.body.data).toBe(false)
      expect(member.body.data.excerpt).toBe('members only')
      expect([again.text, again.headers.get('etag')]).toEqual([anonymous.text, anonymous.headers.get('etag')])
      expect([memberAgain.text, memberAgain.headers.get('etag')]).toEqual([member.text, member.headers.get('etag')])
      expect(member.headers.get('etag')).not.toBe(anonymous.headers.get('etag'))
      for (const response of [anonymous, member, again, memberAgain]) expect(response.headers.get('vary')).toBe('x-member')
      // C35: what an uncached service's chain gives now.
      expect((await fresh.get(`${LIST}/hello`)).text).toBe(again.text)
      expect((await fresh.get(`${LIST}/hello`, { headers: { 'x-member': '1' } })).text).toBe(memberAgain.text)
    } finally {
      await hooked.close()
      await fresh.close()
    }
  })

  test('a callback that reads the URL gets a variant per URL, even where the answer is shared', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data, _content, context) => ({ ...data, seen_at: context.request.url }), { schema: { add: { seen_at: t.String() } } })
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      const plain = await hooked.get(`${LIST}/hello`)
      // An unknown language resolves to the default: the same answer (C9), another URL.
      const unknownLang = await hooked.get(`${LIST}/hello?lang=xx`)
      const plainAgain = await hooked.get(`${LIST}/hello`)
      expect([plain, unknownLang, plainAgain].map((response) => response.headers.get('x-cache'))).toEqual(['MISS', 'HIT', 'HIT'])
      expect(plain.body.data.seen_at).toBe(`http://localhost${LIST}/hello`)
      expect(unknownLang.body.data.seen_at).toBe(`http://localhost${LIST}/hello?lang=xx`)
      expect(plainAgain.text).toBe(plain.text)
      expect(plain.headers.get('vary')).toBeNull()
    } finally {
      await hooked.close()
    }
  })

  test('junk query strings never keep a page\'s own URL from its kept output', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    const { filters, counter } = membersOnly()
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      for (let index = 0; index < 40; index++) await hooked.get(`${LIST}/hello?utm_source=${index}`)
      const runs = counter.calls
      await hooked.get(`${LIST}/hello`)
      await hooked.get(`${LIST}/hello`)
      await hooked.get(`${LIST}/hello`)
      // The first request runs the chain (its target is new) and keeps its output for the next.
      expect(counter.calls).toBe(runs + 1)
    } finally {
      await hooked.close()
    }
  })

  test('a callback that reads a header name the request cannot have, and catches the error, leaves nothing broken', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data, _content, context) => {
      try {
        context.request.headers.get('bad name')
      } catch {}
      return data
    })
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      const responses = [await hooked.get(`${LIST}/hello`), await hooked.get(`${LIST}/hello`)]
      expect(responses.map((response) => [response.status, response.headers.get('x-cache')])).toEqual([
        [200, 'MISS'],
        [200, 'HIT'],
      ])
    } finally {
      await hooked.close()
    }
  })

  test('a volatile callback runs on every request for the answers it touches, and only those', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello' } } })
    await addEntry(db.sql, { translations: { en: { slug: 'quiet' } } })
    let draws = 0
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data) => (data.slug === 'hello' ? { ...data, draw: ++draws } : data), {
      volatile: true,
      schema: { add: { draw: t.Optional(t.Number()) } },
    })
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      hooked.statements.length = 0
      const first = await hooked.get(`${LIST}/hello`)
      const second = await hooked.get(`${LIST}/hello`)
      expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
      expect([first.body.data.draw, second.body.data.draw]).toEqual([1, 2])
      expect(second.headers.get('etag')).not.toBe(first.headers.get('etag'))
      expect(hooked.statements).toHaveLength(1)
      // The callback runs on every item: declared volatile, it marks every answer it runs on.
      await hooked.get(`${LIST}/quiet`)
      await hooked.get(`${LIST}/quiet`)
      expect(draws).toBe(2)
    } finally {
      await hooked.close()
    }
  })

  test('C36: a write drops the variants with their answer; none computed before it is served after its notification', async () => {
    const id = await addEntry(db.sql, { translations: { en: { slug: 'hello', excerpt: 'before' } } })
    const { filters } = membersOnly()
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      await hooked.get(`${LIST}/hello`, { headers: { 'x-member': '1' } })
      expect((await hooked.get(`${LIST}/hello`, { headers: { 'x-member': '1' } })).headers.get('x-cache')).toBe('HIT')
      const changed = hooked.nextChange('entry_translations')
      await db.sql`update entry_translations set excerpt = 'after' where entry_id = ${id}`
      await changed
      const member = await hooked.get(`${LIST}/hello`, { headers: { 'x-member': '1' } })
      expect([member.headers.get('x-cache'), member.body.data.excerpt]).toEqual(['MISS', 'after'])
    } finally {
      await hooked.close()
    }
  })

  test('C25: a kept answer\'s models are frozen: a callback that writes to content fails its request closed and changes nothing for the next', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', title: 'Kept' } } })
    const filters = new FilterRegistry()
    filters.add('service/api/content-item', (data, content, context) => {
      if (context.request.headers.has('x-vandal')) (content.translations[0] as { title: string }).title = 'Changed'
      return { ...data, model_title: content.translations[0]?.title ?? '' }
    }, { schema: { add: { model_title: t.String() } } })
    const hooked = await cachedTestApp(db.url, {}, filters)
    try {
      await settled(hooked)
      const vandal = await hooked.get(`${LIST}/hello`, { headers: { 'x-vandal': '1' } })
      expect([vandal.status, vandal.headers.get('cache-control')]).toEqual([500, 'no-store'])
      const reader = await hooked.get(`${LIST}/hello`)
      expect([reader.status, reader.headers.get('x-cache'), reader.body.data.model_title]).toEqual([200, 'HIT', 'Kept'])
    } finally {
      await hooked.close()
    }
  })

  test('a header with a new value on every request stays within CACHE_MAX_MB and evicts no other answer', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', body: 'x'.repeat(2000) } } })
    await addEntry(db.sql, { translations: { en: { slug: 'other' } } })
    const filters = new FilterRegistry()
    // Outputs of 20 kB: 32 of them would be more than the whole cache.
    filters.add('service/api/content-item', (data, _content, context) => ({ ...data, session: `${context.request.headers.get('x-session') ?? ''}${'x'.repeat(20_000)}` }), {
      schema: { add: { session: t.String() } },
    })
    const maxBytes = 256 * 1024
    const hooked = await cachedTestApp(db.url, {}, filters, maxBytes)
    try {
      await settled(hooked)
      hooked.statements.length = 0
      await hooked.get(`${LIST}/other`)
      const sizes: number[] = []
      for (let index = 0; index < 300; index++) {
        const response = await hooked.get(`${LIST}/hello`, { headers: { 'x-session': crypto.randomUUID() } })
        expect(response.status).toBe(200)
        sizes.push(hooked.cache.stats.bytes)
      }
      expect(Math.max(...sizes)).toBeLessThanOrEqual(maxBytes)
      // Bounded by the variants one answer keeps, long before the bound: the last 200 requests grew nothing.
      expect(sizes.at(-1)).toBe(sizes[99])
      expect((await hooked.get(`${LIST}/other`)).headers.get('x-cache')).toBe('HIT')
      expect(hooked.cache.stats.answers).toBe(2)
      // The flooded answer itself stays kept: its statement ran once.
      expect(hooked.statements.filter((statement) => statement.includes('entry_translations')).length).toBe(2)
    } finally {
      await hooked.close()
    }
  })

  test('a hit answered before the framework carries every header the routes send: GET, HEAD and 304, CORS by list, X-Request-Id, one log line', async () => {
    await addEntry(db.sql, { translations: { en: { slug: 'hello', excerpt: 'members only' } } })
    const { filters } = membersOnly()
    const hooked = await cachedTestApp(db.url, { CORS_ORIGINS: 'https://app.example', CACHE_MAX_AGE: '30' }, filters)
    const ignored = new Set(['x-request-id', 'x-cache', 'age', 'date'])
    const comparable = (headers: Headers) => [...headers].filter(([name]) => !ignored.has(name)).sort(([a], [b]) => a.localeCompare(b))
    try {
      for (const path of [`${LIST}/hello`, LIST, `${LIST}/missing`]) {
        for (const headers of [{}, { 'x-member': '1', origin: 'https://app.example' }, { origin: 'https://elsewhere.example' }] as Record<string, string>[]) {
          await settled(hooked)
          // Drop what is kept: the first request of each case takes the routes.
          hooked.cache.onChange({ table: 'entries', typeIds: 'all' })
          const routed = await hooked.get(path, { headers })
          const kept = await hooked.get(path, { headers })
          expect([routed.headers.get('x-cache'), kept.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
          expect(comparable(kept.headers)).toEqual(comparable(routed.headers))
          expect(kept.text).toBe(routed.text)
          const etag = routed.headers.get('etag')!
          for (const method of ['GET', 'HEAD']) {
            const head = await hooked.app.handle(new Request(`http://localhost${path}`, { method, headers: { ...headers, 'x-request-id': 'from-client.1' } }))
            expect([head.status, head.headers.get('x-request-id'), head.headers.get('x-cache')]).toEqual([routed.status, 'from-client.1', 'HIT'])
            expect(await head.text()).toBe(method === 'HEAD' ? '' : routed.text)
            if (method === 'HEAD') expect(head.headers.get('content-length')).toBe(String(new TextEncoder().encode(routed.text).byteLength))
            const notModified = await hooked.app.handle(new Request(`http://localhost${path}`, { method, headers: { ...headers, 'if-none-match': etag } }))
            expect([notModified.status, notModified.headers.get('x-cache'), notModified.headers.get('etag'), notModified.headers.get('content-type')]).toEqual([304, 'HIT', etag, null])
            expect(notModified.headers.get('vary')).toBe(routed.headers.get('vary'))
          }
        }
      }
      const logged = hooked.loggedRequest(`${LIST}/hello?logged=1`)
      await hooked.get(`${LIST}/hello?logged=1`)
      await logged
      // A hit answered here logs its line before the response is handed over.
      expect((await hooked.get(`${LIST}/hello?logged=1`)).headers.get('x-cache')).toBe('HIT')
      const lines = hooked.logs.filter((line) => line.includes('logged=1')).map((line) => JSON.parse(line))
      expect(lines.map((line) => [line.msg, line.status, line.method, line.path])).toEqual([
        ['request', 200, 'GET', `${LIST}/hello`],
        ['request', 200, 'GET', `${LIST}/hello`],
      ])
      // A 404 answer logs 404 whether the routes or the slot answered it.
      const missing = hooked.loggedRequest(`${LIST}/missing?logged=2`)
      await hooked.get(`${LIST}/missing?logged=2`)
      await missing
      await hooked.get(`${LIST}/missing?logged=2`)
      expect(hooked.logs.filter((line) => line.includes('logged=2')).map((line) => JSON.parse(line).status)).toEqual([404, 404])
    } finally {
      await hooked.close()
    }
  })
})
