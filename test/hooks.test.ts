import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmod } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { CONTENT_ITEM_HOOK, t, type ContentItemFilter, type EntryModel, type FilterContext, type FilterOptions } from '../src/hooks/extension'
import { loadExtensions } from '../src/hooks/loader'
import { FilterRegistry } from '../src/hooks/registry'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addAuthor, addEntry, addImage, addLanguage, addTerm } from './support/fixtures'
import { temporaryFolder } from './support/leftovers'
import { ROOT, runScript } from './support/service'

const db = await createTestDatabase()
const opened: TestApp[] = []
afterAll(async () => {
  for (const api of opened) await api.close()
  await db.sql.end()
})

let full: number
let bare: number
beforeAll(async () => {
  await addLanguage(db.sql, 'fr')
  await addLanguage(db.sql, 'de')
  const author = await addAuthor(db.sql, 'Ada')
  const image = await addImage(db.sql, 'uploads/cat.jpg', { thumbnail: 'uploads/cat-t.jpg' }, 'A cat')
  const tag = await addTerm(db.sql, 'tag', 'Cats')
  full = await addEntry(db.sql, {
    publishedAt: new Date(Date.now() - 1000),
    authorId: author,
    imageId: image,
    termIds: [tag],
    translations: {
      en: { title: 'Hello', slug: 'hello', excerpt: 'Hi', body: '<p>English body</p>' },
      fr: { title: 'Bonjour', slug: 'bonjour', excerpt: 'Salut', body: '<p>Corps</p>' },
    },
  })
  bare = await addEntry(db.sql, { publishedAt: new Date(Date.now() - 5000), translations: { de: { title: 'Nur Deutsch', slug: 'nur-deutsch' } } })
  const [{ id: field }] = await db.sql`insert into custom_fields (content_type_id, key) select id, 'subtitle' from content_types where slug = 'post' returning id`
  const [{ id: plain }] = await db.sql`insert into custom_fields (content_type_id, key, type) select id, 'rating', 'number' from content_types where slug = 'post' returning id`
  await db.sql`
    insert into field_values (entry_id, custom_field_id, language_code, value) values
      (${full}, ${field}, 'en', '"An English subtitle"'),
      (${full}, ${field}, 'fr', '"Un sous-titre"'),
      (${full}, ${plain}, null, '5')
  `
})

function apiWith(filters: [ContentItemFilter, (number | FilterOptions)?][], env: Record<string, string> = {}): TestApp {
  const registry = new FilterRegistry()
  for (const [callback, options] of filters) registry.add(CONTENT_ITEM_HOOK, callback, options, 'test/hooks.test.ts')
  const api = testApp(db.url, env, registry)
  opened.push(api)
  return api
}

describe('the filter hook service/api/content-item', () => {
  test('C24: callbacks run by priority, ties in registration order, each on the previous output', async () => {
    const step = (name: string): ContentItemFilter => (data) => ({ ...data, title: `${data.title} ${name}` })
    // The third argument: a plain number (the priority), or the options.
    const api = apiWith([[step('20'), 20], [step('10 first'), { priority: 10 }], [step('5'), 5], [step('10 second')]])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data.map((item: any) => item.title)).toEqual(['Hello 5 10 first 10 second 20', 'null 5 10 first 10 second 20'])
    expect((await api.get('/api/v1/content/post/hello')).body.data.title).toBe('Hello 5 10 first 10 second 20')
  })

  test('C24: async callbacks run in order, never concurrently for the same item', async () => {
    const running = new Set<number>()
    let overlap = false
    const slow = (name: string, ms: number): ContentItemFilter => async (data) => {
      if (running.has(data.id!)) overlap = true
      running.add(data.id!)
      await Bun.sleep(ms)
      running.delete(data.id!)
      return { ...data, trace: [...((data.trace as string[]) ?? []), name] }
    }
    const trace = { schema: { add: { trace: t.Array(t.String()) } } }
    const api = apiWith([[slow('a', 30), trace], [slow('b', 1), trace], [slow('c', 10), trace]])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data.map((item: any) => item.trace)).toEqual([['a', 'b', 'c'], ['a', 'b', 'c']])
    expect(overlap).toBe(false)
  })

  test('C24: an item whose callback returns a promise goes on with the next callback once it settles; items that return at once keep their place', async () => {
    const later = { schema: { add: { waited: t.Boolean() } } }
    const next = { schema: { add: { after: t.String() } } }
    const api = apiWith([
      [(data) => (data.id === full ? Bun.sleep(10).then(() => ({ ...data, waited: true })) : { ...data, waited: false }), later],
      [(data) => ({ ...data, after: `${data.waited}` }), next],
    ])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data.map((item: any) => [item.id, item.waited, item.after])).toEqual([[full, true, 'true'], [bare, false, 'false']])
    expect(Object.keys(list.body.data[0]).slice(-2)).toEqual(['waited', 'after'])
  })

  test('C27: an output a callback keeps (one object for several items) is served as it was when its chain ended', async () => {
    // One object returned for every item; a later callback writes to it in place: each item keeps its own value.
    const shared: Record<string, unknown> = {}
    const api = apiWith([
      [(data) => Object.assign(shared, data), { priority: 1 }],
      [(data) => Object.assign(data, { title: `title of ${data.id}` }), { priority: 2 }],
    ])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data.map((item: any) => item.title)).toEqual([`title of ${full}`, `title of ${bare}`])
  })

  test('C23: an item that fails at once while another still waits fails the request, and the waiting one leaves no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const heard = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', heard)
    try {
      // The list's first item is `full`: it waits, then fails; the second fails at once.
      const api = apiWith([[function mixed(data) {
        if (data.id === full) return Bun.sleep(20).then(() => Promise.reject(new Error('late boom')))
        throw new Error('early boom')
      }]])
      const response = await api.get('/api/v1/content/post')
      expect([response.status, response.text]).toEqual([500, '{"error":"Internal server error."}'])
      await Bun.sleep(80)
      expect(unhandled).toEqual([])
      expect(api.logs.map((line) => JSON.parse(line)).find((line) => line.level === 'error')?.error.message).toMatch(/"mixed" \(#1 of test\/hooks.test.ts\) threw: early boom/)
    } finally {
      process.off('unhandledRejection', heard)
    }
  })

  test('C26: null makes the item null, in a list and for a single entry', async () => {
    const api = apiWith([[(data) => (data.id === full ? null : data)], [(data) => ({ ...data, after: true }), { schema: { add: { after: t.Boolean() } } }]])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data).toEqual([null, expect.objectContaining({ id: bare, after: true })])
    expect(list.body.meta.total).toBe(2)
    const single = await api.get('/api/v1/content/post/hello')
    expect([single.status, single.body]).toEqual([200, { data: null }])
  })

  test('C27: added fields come after the default ones; removed fields are absent', async () => {
    const api = apiWith([[(data) => {
      const { excerpt: _excerpt, terms: _terms, ...rest } = data
      return { first: 1, ...rest, last: 2 }
    }, { schema: { add: { first: t.Integer(), last: t.Integer() }, remove: ['excerpt', 'terms'] } }]])
    const keys = ['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'meta_title', 'meta_description', 'featured_image', 'first', 'last']
    expect(Object.keys((await api.get('/api/v1/content/post')).body.data[0])).toEqual(keys)
    expect(Object.keys((await api.get('/api/v1/content/post/hello')).body.data)).toEqual(keys)
    // Any name may be added, even one an object has by default.
    const odd = apiWith([[(data) => ({ ...data, constructor: 'c', toString: 't' }), { schema: { add: { constructor: t.String(), toString: t.String() } } }]])
    expect((await odd.get('/api/v1/content/post/hello')).body.data).toMatchObject({ constructor: 'c', toString: 't' })
  })

  test('C24: a callback may return any thenable, not only a native promise', async () => {
    const thenable = (value: unknown) => ({ then: (resolve: (v: unknown) => void) => setTimeout(() => resolve(value), 5) })
    const api = apiWith([[(data) => thenable({ ...data, via: 'thenable' }) as never, { schema: { add: { via: t.String() } } }]])
    expect((await api.get('/api/v1/content/post/hello')).body.data.via).toBe('thenable')
  })

  test('C25: the model has every relation loaded, for a full entry and for one with no author, image or default translation', async () => {
    const seen: EntryModel[] = []
    const contexts: FilterContext[] = []
    const api = apiWith([[(data, content, context) => {
      seen.push(content)
      contexts.push(context)
      return data
    }]])
    await api.get('/api/v1/content/post?lang=fr', { headers: { 'x-test': '1' } })
    const [withAll, withNothing] = seen
    expect(withAll).toMatchObject({
      id: full,
      content_type: { slug: 'post' },
      author: { id: expect.any(Number), name: 'Ada' },
      featuredImage: {
        path: 'uploads/cat.jpg',
        url: 'https://cms.example.com/media/uploads/cat.jpg',
        alt: 'A cat',
        variants: [{ name: 'thumbnail', path: 'uploads/cat-t.jpg', url: 'https://cms.example.com/media/uploads/cat-t.jpg' }],
      },
      terms: [{ name: 'Cats', slug: 'cats', position: 0, taxonomy: { slug: 'tag' } }],
    })
    expect(withAll.translations.map((row) => [row.language_code, row.title, row.body])).toEqual([
      ['en', 'Hello', '<p>English body</p>'],
      ['fr', 'Bonjour', '<p>Corps</p>'],
    ])
    expect(withAll.fieldValues.map((value) => [value.key, value.type, value.language_code, value.value])).toEqual([
      ['rating', 'number', null, 5],
      ['subtitle', 'text', 'en', 'An English subtitle'],
      ['subtitle', 'text', 'fr', 'Un sous-titre'],
    ])
    // The timestamps the database holds, formatted as in C13.
    const [stored] = await db.sql<{ published_at: string; created_at: string; updated_at: string }[]>`
      select
        to_char(published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as published_at,
        to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as created_at,
        to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as updated_at
      from entries
      where id = ${full}
    `
    expect({ published_at: withAll.published_at, created_at: withAll.created_at, updated_at: withAll.updated_at }).toEqual({ ...stored })
    expect(withNothing).toMatchObject({ id: bare, author: null, author_id: null, featuredImage: null, featured_image_id: null, terms: [], fieldValues: [] })
    expect(withNothing.translations.map((row) => row.language_code)).toEqual(['de'])
    const context = contexts[0]
    expect([context.language, context.defaultLanguage, context.route, context.request.method]).toEqual(['fr', 'en', 'service.api.content.index', 'GET'])
    expect(context.request.url).toBe('http://localhost/api/v1/content/post?lang=fr')
    expect(context.request.headers.get('x-test')).toBe('1')
    await api.get('/api/v1/content/post/hello')
    expect(contexts.at(-1)!.route).toBe('service.api.content.show')
  })

  test('C25: with a callback registered, each request is still one statement', async () => {
    const api = apiWith([[(data) => data]])
    for (const path of ['/api/v1/content/post?per_page=1', '/api/v1/content/post?per_page=100', '/api/v1/content/post/hello']) {
      api.statements.length = 0
      await api.get(path)
      expect([path, api.statements.length]).toEqual([path, 1])
    }
  })

  test('C28: with no callback, the lean statement runs and the item is exactly C12', async () => {
    const api = apiWith([])
    api.statements.length = 0
    const item = (await api.get('/api/v1/content/post')).body.data[0]
    expect(Object.keys(item)).toHaveLength(12)
    expect(api.statements[0]).not.toContain('field_values')
  })

  test('context.once runs its work once per request, shared by every item', async () => {
    let calls = 0
    const api = apiWith([[async (data, _content, context) => ({ ...data, plan: await context.once('plan', async () => ++calls) }), { schema: { add: { plan: t.Integer() } } }]])
    const list = await api.get('/api/v1/content/post')
    expect(list.body.data.map((item: any) => item.plan)).toEqual([1, 1])
    await api.get('/api/v1/content/post')
    expect(calls).toBe(2)
  })

  test('C30: Vary names exactly the request headers that callbacks read', async () => {
    const declared = { schema: { add: { member: t.Boolean(), plan: t.Union([t.String(), t.Null()]) } } }
    const api = apiWith([[(data, _content, context) => ({ ...data, member: context.request.headers.has('X-Member'), plan: context.request.headers.get('x-plan') }), declared]])
    const response = await api.get('/api/v1/content/post', { headers: { 'x-member': '1', 'x-other': 'a' } })
    expect(response.headers.get('vary')).toBe('x-member, x-plan')
    const quiet = apiWith([[(data) => data]])
    expect((await quiet.get('/api/v1/content/post', { headers: { 'x-member': '1' } })).headers.get('vary')).toBeNull()
    const restricted = apiWith([[(data, _content, context) => (context.request.headers.get('x-member') ? data : null)]], { CORS_ORIGINS: 'https://app.example' })
    const both = await restricted.get('/api/v1/content/post/hello', { headers: { origin: 'https://app.example' } })
    expect(both.headers.get('vary')).toBe('Origin, x-member')
  })
})

describe('failures fail closed (C23, C26, C31)', () => {
  // Each fails on the entry `full` only, so that the same chain then serves `bare`.
  const cases: [string, ContentItemFilter, RegExp][] = [
    ['throws', function throwing(data) { if (data.id === full) throw new Error('boom'); return data }, /"throwing" \(#2 of test\/hooks.test.ts\) threw: boom/],
    ['rejects', async function rejecting(data) { if (data.id === full) throw new Error('async boom'); return data }, /"rejecting" \(#2 of test\/hooks.test.ts\) threw: async boom/],
    ['returns undefined', function forgetful(data) { return data.id === full ? (undefined as never) : data }, /"forgetful" \(#2 of test\/hooks.test.ts\) returned undefined/],
    ['returns an array', function arrays(data) { return data.id === full ? ([] as never) : data }, /"arrays" \(#2 of test\/hooks.test.ts\) returned an array/],
    ['never settles', function pending(data) { return data.id === full ? new Promise<never>(() => {}) : data }, /"pending" \(#2 of test\/hooks.test.ts\) did not settle within 50 ms/],
    ['returns a thenable that never settles', function stuck(data) { return data.id === full ? ({ then() {} } as never) : data }, /"stuck" \(#2 of test\/hooks.test.ts\) did not settle within 50 ms/],
    ['returns an object whose then cannot be read', function trapped(data) { return data.id === full ? (new Proxy({}, { get: (_, key) => { if (key === 'then') throw new Error('trap'); return undefined } }) as never) : data }, /"trapped" \(#2 of test\/hooks.test.ts\) threw: trap/],
  ]
  for (const [what, callback, logged] of cases) {
    test(`a callback that ${what}: 500 without the unfiltered item; the log names the extension; the next request is served`, async () => {
      const api = apiWith([[(data) => ({ ...data, before: true }), { schema: { add: { before: t.Boolean() } } }], [callback]], { HOOK_TIMEOUT_MS: '50' })
      for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello']) {
        const response = await api.get(path)
        expect([response.status, response.text]).toEqual([500, '{"error":"Internal server error."}'])
      }
      const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
      expect(errors[0].error.message).toMatch(logged)
      const next = await api.get('/api/v1/content/post/nur-deutsch?lang=de')
      expect([next.status, next.body.data.id, next.body.data.before]).toEqual([200, bare, true])
    })
  }
})

describe('declared schemas: addFilter(name, callback, { priority, schema: { add, remove } })', () => {
  const readingTime: ContentItemFilter = (data) => {
    const { excerpt: _excerpt, ...rest } = data
    return { ...rest, reading_time_minutes: 3 }
  }
  const declared: FilterOptions = { priority: 10, schema: { add: { reading_time_minutes: t.Integer() }, remove: ['excerpt'] } }

  test('an output that matches its declaration is served as it is', async () => {
    const api = apiWith([[readingTime, declared]])
    const single = await api.get('/api/v1/content/post/hello')
    expect(single.status).toBe(200)
    expect(single.body.data.reading_time_minutes).toBe(3)
    expect('excerpt' in single.body.data).toBe(false)
  })

  const mismatches: [string, ContentItemFilter, FilterOptions | undefined, RegExp][] = [
    ['adds a field it did not declare', (data) => ({ ...data, flag: true }), undefined, /\/flag: Unexpected property/],
    ['removes a field it did not declare', ({ excerpt: _excerpt, ...rest }) => rest, undefined, /\/excerpt: Expected required property/],
    ['adds a declared field of another type', (data) => ({ ...data, reading_time_minutes: '3' }), { schema: { add: { reading_time_minutes: t.Integer() } } }, /\/reading_time_minutes: Expected integer/],
    ['leaves out a field it declared it adds', (data) => data, { schema: { add: { reading_time_minutes: t.Integer() } } }, /\/reading_time_minutes: Expected required property/],
    ['changes the type of a default field', (data) => ({ ...data, id: String(data.id) }) as never, undefined, /\/id: Expected integer/],
  ]
  for (const [what, callback, options, problem] of mismatches) {
    test(`a callback that ${what}: under test (NODE_ENV=test) a 500 whose log names the callback and the mismatch`, async () => {
      const api = apiWith([[callback, options]])
      const response = await api.get('/api/v1/content/post/hello')
      expect([response.status, response.text]).toEqual([500, '{"error":"Internal server error."}'])
      const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
      expect(errors[0].error.message).toMatch(/#1 of test\/hooks.test.ts\)? returned an item that does not match its declared schema/)
      expect(errors[0].error.message).toMatch(problem)
    })
  }

  test('with HOOK_SCHEMA_MISMATCH=log (the default outside tests) the output is served and the mismatch logged once per callback', async () => {
    const api = apiWith([[function flagging(data) { return { ...data, flag: true } }]], { HOOK_SCHEMA_MISMATCH: 'log' })
    for (const path of ['/api/v1/content/post', '/api/v1/content/post/hello', '/api/v1/content/post']) {
      const response = await api.get(path)
      expect([path, response.status]).toEqual([path, 200])
    }
    expect((await api.get('/api/v1/content/post/hello')).body.data.flag).toBe(true)
    const errors = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0].msg).toBe('extension output does not match its declared schema; served as it is, reported once')
    expect(errors[0].error.message).toMatch(/"flagging" \(#1 of test\/hooks.test.ts\) returned an item that does not match its declared schema: \/flag: Unexpected property/)
  })

  test('a declaration that cannot be right is refused before the service starts', () => {
    const refused = (options: unknown) => {
      const registry = new FilterRegistry()
      registry.add(CONTENT_ITEM_HOOK, (data) => data, options as FilterOptions, 'ext.ts')
      return () => registry.itemSchema
    }
    expect(refused({ schema: { remove: ['excrept'] } })).toThrow(/#1 of ext.ts: schema.remove names "excrept", which the item does not have/)
    expect(refused({ schema: { add: { minutes: { type: 'integer' } } } })).toThrow(/schema.add.minutes is not a schema: build it with t/)
    expect(() => refused({ schema: { remove: 'excerpt' } })).toThrow(/schema.remove must be an array/)
    expect(() => refused({ priority: 'high' })).toThrow(/The priority must be a number/)
  })

  test('shapes build on each other in the order callbacks run, not the order they were added', () => {
    const registry = new FilterRegistry()
    registry.add(CONTENT_ITEM_HOOK, (data) => data, { priority: 20, schema: { remove: ['minutes'] } })
    registry.add(CONTENT_ITEM_HOOK, (data) => data, { priority: 5, schema: { add: { minutes: t.Integer() } } })
    const schema = registry.itemSchema
    expect(Object.keys(schema.properties).at(-1)).toBe('minutes')
    expect(schema.required).not.toContain('minutes')
  })

  test('context.publicUrl is the origin of PUBLIC_URL, never the request Host', async () => {
    const seen: string[] = []
    const api = apiWith([[(data, _content, context) => (seen.push(context.publicUrl), data)]], { PUBLIC_URL: 'https://api.example.org/some/path/' })
    await api.get('/api/v1/content/post/hello', { headers: { host: 'internal:3000' } })
    expect(seen).toEqual(['https://api.example.org'])
  })
})

describe('the guide, src/hooks/README.md', () => {
  // Each example has its test beside it, written with the test kit (src/hooks/examples/*.test.ts).
  test('shows reading-time and its test exactly as they are in src/hooks/examples', async () => {
    const guide = await Bun.file(join(ROOT, 'src', 'hooks', 'README.md')).text()
    const shown = /## A first extension[\s\S]*?```ts\n([\s\S]*?)```/.exec(guide)?.[1]
    expect(shown).toBe(await Bun.file(join(ROOT, 'src', 'hooks', 'examples', 'reading-time.ts')).text())
    const test = /## Testing your extension[\s\S]*?```ts\n([\s\S]*?)```/.exec(guide)?.[1]
    expect(test).toBe(await Bun.file(join(ROOT, 'src', 'hooks', 'examples', 'reading-time.test.ts')).text())
  })
})

describe('the extension loader', () => {
  let dir: string
  let temporary: Awaited<ReturnType<typeof temporaryFolder>>
  beforeAll(async () => {
    temporary = await temporaryFolder('vitrine-extensions-')
    dir = temporary.path
    await chmod(dir, 0o755)
  })
  afterAll(() => temporary.remove())

  test('loads every *.ts file in file-name order; registration order follows', async () => {
    const extension = (name: string) => [
      `import { t } from '${join(import.meta.dir, '..', 'src', 'hooks', 'extension')}'`,
      `export default ({ addFilter }) => addFilter('service/api/content-item', (data) => ({ ...data, trace: [...(data.trace ?? []), '${name}'] }), { schema: { add: { trace: t.Array(t.String()) } } })\n`,
    ].join('\n')
    const folder = join(dir, 'ordered')
    await Bun.write(join(folder, 'b-second.ts'), extension('b'))
    await Bun.write(join(folder, 'a-first.ts'), extension('a'))
    await Bun.write(join(folder, 'c-third.ts'), extension('c'))
    await Bun.write(join(folder, 'notes.md'), 'not an extension')
    // A test beside an extension (issue 37) is not one: loading it would run bun:test's functions in the service.
    await Bun.write(join(folder, 'a-first.test.ts'), "throw new Error('a test file was loaded as an extension')\n")
    // A relative EXTENSIONS_DIR is read from the working directory.
    const { registry, files } = await loadExtensions(relative(process.cwd(), folder))
    expect(files).toEqual(['a-first.ts', 'b-second.ts', 'c-third.ts'])
    const api = testApp(db.url, {}, registry)
    opened.push(api)
    expect((await api.get('/api/v1/content/post/hello')).body.data.trace).toEqual(['a', 'b', 'c'])
  })

  test('a file with a syntax error stops the start with a message naming it', async () => {
    const folder = join(dir, 'broken')
    await Bun.write(join(folder, '10-fine.ts'), 'export default () => {}\n')
    await Bun.write(join(folder, '20-broken.ts'), 'export default ({ addFilter } => {\n')
    const run = await runScript('start', { EXTENSIONS_DIR: folder, DATABASE_URL: db.url, PORT: '0' })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('vitrine: The extension')
    // The first of Bun's build messages, where it is: not "2 errors building …".
    expect(run.stderr).toMatch(/20-broken\.ts failed to load: Expected .+ \(line 1, column \d+\), and 1 more\n$/)
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    // One error alone comes as a build message of its own: where it is, too.
    await Bun.write(join(folder, '20-broken.ts'), 'export default (api) => {\n  api.x(=> 1)\n}\n')
    const single = await runScript('start', { EXTENSIONS_DIR: folder, DATABASE_URL: db.url, PORT: '0' })
    expect(single.stderr.trim()).toEndWith('20-broken.ts failed to load: Unexpected => (line 2, column 9)')
  })

  test('a schema declaration that cannot apply stops the start with a message naming the file', async () => {
    const folder = join(dir, 'declared')
    await Bun.write(join(folder, '10-typo.ts'), "export default ({ addFilter }) => addFilter('service/api/content-item', (data) => data, { schema: { remove: ['excrept'] } })\n")
    await expect(loadExtensions(folder)).rejects.toThrow(/declared\/10-typo.ts: schema.remove names "excrept"/)
  })

  test('the extensions shown in docs/extensions.md and src/hooks/README.md load, declare their shape, and run', async () => {
    const root = join(import.meta.dir, '..')
    const shown = [
      ...(await Bun.file(join(root, 'docs', 'extensions.md')).text()).matchAll(/```ts\n(\/\/ src\/hooks\/extensions\/.*\n[\s\S]*?)```/g),
      ...(await Bun.file(join(root, 'src', 'hooks', 'README.md')).text()).matchAll(/## A first extension[\s\S]*?```ts\n([\s\S]*?)```/g),
    ].map((match) => match[1])
    expect(shown).toHaveLength(2)
    const folder = join(dir, 'readme')
    for (const [index, source] of shown.entries()) await Bun.write(join(folder, `${index}.ts`), source)
    const { registry } = await loadExtensions(folder)
    const api = testApp(db.url, {}, registry)
    opened.push(api)
    const response = await api.get('/api/v1/content/post/hello')
    expect(response.status).toBe(200)
    expect(response.body.data).toMatchObject({ reading_time_minutes: 1, reading_minutes: 1 })
    expect('excerpt' in response.body.data).toBe(false)
  })

  test('an extension in a folder outside the repository imports its types from #vitrine/extension', async () => {
    const folder = join(dir, 'elsewhere')
    await Bun.write(
      join(folder, 'flag.ts'),
      "import { defineExtension, itemTranslation, t, CONTENT_ITEM_HOOK } from '#vitrine/extension'\n" +
        'export default defineExtension(({ addFilter }) => addFilter(CONTENT_ITEM_HOOK, (data, content, context) => ({ ...data, shown: itemTranslation(content, context)?.language_code }), { schema: { add: { shown: t.String() } } }))\n',
    )
    expect(folder.startsWith(ROOT)).toBe(false)
    const { registry } = await loadExtensions(folder)
    const api = testApp(db.url, {}, registry)
    opened.push(api)
    expect((await api.get('/api/v1/content/post/hello?lang=de')).body.data.shown).toBe('en')
  })

  test('an inline arrow callback that fails is named in the log by its file and its place in it', async () => {
    const folder = join(dir, 'inline')
    await Bun.write(
      join(folder, '30-two.ts'),
      "export default ({ addFilter }) => {\n  addFilter('service/api/content-item', (data) => data)\n  addFilter('service/api/content-item', () => { throw new Error('inline boom') })\n}\n",
    )
    const { registry } = await loadExtensions(folder)
    const api = testApp(db.url, {}, registry)
    opened.push(api)
    expect((await api.get('/api/v1/content/post/hello')).status).toBe(500)
    const [logged] = api.logs.map((line) => JSON.parse(line)).filter((line) => line.level === 'error')
    expect(logged.error.message).toBe(`The filter callback #2 of ${join(folder, '30-two.ts')} threw: inline boom`)
  })

  test('an unknown hook name is refused at load time', async () => {
    const folder = join(dir, 'typo')
    await Bun.write(join(folder, 'typo.ts'), "export default ({ addFilter }) => addFilter('service/api/content-items', (data) => data)\n")
    await expect(loadExtensions(folder)).rejects.toThrow(/typo.ts failed to load: Unknown hook "service\/api\/content-items"/)
  })
})
