import { afterAll, describe, expect, test } from 'bun:test'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { t, type ContentItemFilter } from '#vitrine/extension'
import { extensionTestKit, type ExtensionTestKit } from '#vitrine/extension/testing'
import { removeAtEnd, temporaryFolder } from './support/leftovers'
import { ROOT } from './support/service'

// The kit's own tests (issue 37): what it serves is what the service serves.
// The first kit of a run loads the demo, seconds on a loaded machine (one run timed out at 5 s): each test says its own.
const KIT_TIMEOUT_MS = 30_000
const kits: ExtensionTestKit[] = []
afterAll(async () => {
  for (const kit of kits) await kit.close()
})

async function kitWith(...args: Parameters<typeof extensionTestKit>): Promise<ExtensionTestKit> {
  const kit = await extensionTestKit(...args)
  kits.push(kit)
  return kit
}

describe('#vitrine/extension/testing', () => {
  test('one callback alone, on a demo entry, in a language: the item as the single-entry route serves it', async () => {
    const seen: string[] = []
    const kit = await kitWith({
      extensions: (data, content, context) => {
        seen.push(`${context.route} ${context.language} ${content.content_type.slug}`)
        return { ...data, languages: content.translations.map((row) => row.language_code) }
      },
      options: { schema: { add: { languages: t.Array(t.String()) } } },
    })
    const english = await kit.item({ type: 'post', slug: 'shipping-a-content-api' })
    expect(english).toMatchObject({ title: 'Shipping a content API', slug: 'shipping-a-content-api', languages: ['de', 'en', 'fr'] })
    // Asked by its English slug, served in French: the kit asks for the French slug, as a client following alternates would.
    const french = await kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { language: 'fr' })
    expect(french).toMatchObject({ title: 'Shipping a content API (FR)', slug: 'shipping-a-content-api-fr' })
    expect(seen).toEqual(['service.api.content.show en post', 'service.api.content.show fr post'])
  }, KIT_TIMEOUT_MS)

  test('an entry described: translations, terms, field values, author and image reach the callback and the item', async () => {
    const kit = await kitWith({
      extensions: (data, content) => ({ ...data, fields: Object.fromEntries(content.fieldValues.map((value) => [`${value.key}:${value.language_code}`, value.value])) }),
      options: { schema: { add: { fields: t.Record(t.String(), t.Unknown()) } } },
    })
    const item = await kit.item({
      type: 'recipe',
      translations: { en: { title: 'Pancakes', slug: 'pancakes', body: '<p>Flour, eggs, milk.</p>' }, es: { title: 'Tortitas' } },
      terms: [{ taxonomy: 'tag', name: 'Breakfast' }, { taxonomy: 'tag', name: 'TypeScript', slug: 'typescript' }],
      fieldValues: [{ key: 'serves', value: 4, type: 'number' }, { key: 'tip', value: 'Rest the batter', language: 'en' }],
      author: 'Ada',
      featuredImage: { path: 'uploads/pancakes.jpg', alt: 'A stack' },
    }, { language: 'es' })
    expect(item).toMatchObject({
      title: 'Tortitas',
      author: { name: 'Ada' },
      featured_image: { url: 'https://cms.example.com/media/uploads/pancakes.jpg' },
      terms: [{ name: 'Breakfast', slug: 'breakfast' }, { name: 'TypeScript', slug: 'typescript' }],
      fields: { 'serves:null': 4, 'tip:en': 'Rest the batter' },
    })
    // A slug left out is made up; the demo's own term was reused, not doubled.
    expect(item!.slug).toMatch(/^described-\d+-es$/)
  }, KIT_TIMEOUT_MS)

  test('a header the callback reads: the item differs with it, Vary names it, and the cache keeps both variants apart', async () => {
    const greet: ContentItemFilter = (data, _content, context) => ({ ...data, greeting: context.request.headers.get('x-name') ?? 'stranger' })
    const kit = await kitWith({ extensions: greet, options: { schema: { add: { greeting: t.String() } } } })
    const entry = { type: 'post', slug: 'shipping-a-content-api' }
    const ada = await kit.serve(entry, { headers: { 'X-Name': 'Ada' } })
    expect(ada.item?.greeting).toBe('Ada')
    expect(ada.headers.get('vary')?.toLowerCase()).toContain('x-name')
    expect((await kit.item(entry))?.greeting).toBe('stranger')
    const again = await kit.serve(entry, { headers: { 'X-Name': 'Ada' } })
    expect([again.item?.greeting, again.headers.get('x-cache')]).toEqual(['Ada', 'HIT'])
  }, KIT_TIMEOUT_MS)

  test('with the cache off every request runs the chain', async () => {
    let runs = 0
    const kit = await kitWith({ extensions: (data) => (runs++, data), cache: false })
    const entry = { type: 'page', slug: 'about-us' }
    await kit.item(entry)
    const second = await kit.serve(entry)
    expect(runs).toBe(2)
    expect(second.headers.get('x-cache')).toBe('BYPASS')
  }, KIT_TIMEOUT_MS)

  test('a callback that returns null: the item is null', async () => {
    const kit = await kitWith({ extensions: () => null })
    expect(await kit.item({ type: 'post', slug: 'shipping-a-content-api' })).toBeNull()
  }, KIT_TIMEOUT_MS)

  test('extension files, in order, with fields (C44) and alternates (C45) as a client asks for them', async () => {
    const kit = await kitWith({ extensions: ['src/hooks/examples/reading-time.ts', 'src/hooks/examples/body.ts'] })
    const item = await kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { fields: ['slug', 'alternates', 'reading_minutes'] })
    expect(item).toEqual({
      slug: 'shipping-a-content-api',
      alternates: [
        { language: 'de', slug: 'shipping-a-content-api-de' },
        { language: 'en', slug: 'shipping-a-content-api' },
        { language: 'fr', slug: 'shipping-a-content-api-fr' },
      ],
      reading_minutes: 1,
    })
    expect(Object.keys((await kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { alternates: true }))!).slice(-3)).toEqual(['alternates', 'reading_minutes', 'body'])
  }, KIT_TIMEOUT_MS)

  test('C55: an item as a search finds it, with highlights a callback reads; fields keep out the id the kit finds it by', async () => {
    const kit = await kitWith({
      extensions: (data) => ({ ...data, marked: data.highlights?.title?.includes('<mark>') ?? false }),
      options: { schema: { add: { marked: t.Boolean() } } },
    })
    const entry = { type: 'post', translations: { en: { title: 'Sourdough & rye', excerpt: 'A <b>crusty</b> loaf' } } }
    const found = await kit.item(entry, { search: 'sourd', highlights: true, fields: ['title', 'highlights', 'marked'] })
    expect(found).toEqual({ title: 'Sourdough & rye', highlights: { title: '<mark>Sourdough</mark> &amp; rye', excerpt: 'A &lt;b&gt;crusty&lt;/b&gt; loaf' }, marked: true })
    // Without include=highlights the list's items carry none, and the callback sees none.
    expect(await kit.item(entry, { search: 'sourdough' })).toMatchObject({ title: 'Sourdough & rye', marked: false })
    await expect(kit.item(entry, { highlights: true })).rejects.toThrow(/highlights needs a search/)
    await expect(kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { search: 'sourdough' })).rejects.toThrow(/does not find entry \d+ on its first page/)
  }, KIT_TIMEOUT_MS)

  test('left out, the installed chain: the folder the service loads (empty here: the item is the default one)', async () => {
    const kit = await kitWith()
    const item = await kit.item({ type: 'post', slug: 'shipping-a-content-api' })
    expect(Object.keys(item!)).toEqual(['id', 'status', 'published_at', 'created_at', 'author', 'title', 'slug', 'excerpt', 'meta_title', 'meta_description', 'featured_image', 'terms'])
  }, KIT_TIMEOUT_MS)

  test('a failing callback fails the test with the service’s log line', async () => {
    const kit = await kitWith({ extensions: function broken() { throw new Error('boom') } })
    await expect(kit.item({ type: 'post', slug: 'shipping-a-content-api' })).rejects.toThrow(/500[\s\S]*"broken"[\s\S]*boom/)
  }, KIT_TIMEOUT_MS)

  test('an extension and its test in a folder outside this repository, run with bun test from here', async () => {
    const temporary = await temporaryFolder('vitrine-outside-')
    const folder = temporary.path
    try {
      await writeFile(join(folder, '10-flag.ts'), [
        "import { defineExtension, t } from '#vitrine/extension'",
        "export default defineExtension(({ addFilter }) => addFilter('service/api/content-item', (data) => ({ ...data, outside: true }), { schema: { add: { outside: t.Boolean() } } }))",
      ].join('\n'))
      await writeFile(join(folder, '10-flag.test.ts'), [
        "import { afterAll, expect, test } from 'bun:test'",
        "import { extensionTestKit } from '#vitrine/extension/testing'",
        'const kit = await extensionTestKit({ extensions: import.meta.dir })',
        'afterAll(() => kit.close())',
        "test('flags', async () => expect((await kit.item({ type: 'post', slug: 'shipping-a-content-api' }))?.outside).toBe(true))",
      ].join('\n'))
      const run = Bun.spawn(['bun', 'test', join(folder, '10-flag.test.ts')], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
      // A run stopped meanwhile stops this one too (its preload then removes its cluster).
      const registered = removeAtEnd(async () => {
        run.kill('SIGTERM')
        if ((await Promise.race([run.exited, Bun.sleep(15_000).then(() => 'late')])) === 'late') run.kill('SIGKILL')
      })
      const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
      registered.done()
      expect({ code, output: `${stdout}${stderr}` }).toMatchObject({ code: 0, output: expect.stringContaining('1 pass') })
    } finally {
      await temporary.remove()
    }
  }, 120_000)
})
