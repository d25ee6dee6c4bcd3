import { afterAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { testApp } from './support/app'
import { addEntry, addImage, addLanguage, addTerm, clearContent, type TranslationFields } from './support/fixtures'
import { random } from './support/random'
import { CONTENT_ITEM_HOOK } from '../src/hooks/extension'
import { FilterRegistry } from '../src/hooks/registry'

/**
 * Property tests over generated data sets: random statuses, dates with ties
 * and nulls, missing translations, and slugs that collide across languages
 * and types. An independent model of C1, C11, C14 and C19 is the oracle.
 */
const db = await createTestDatabase()
const api = testApp(db.url)
// With a callback registered the item's fields come from the entry's model
// instead (C25, C28): a pass-through callback must change nothing.
const passThrough = new FilterRegistry()
passThrough.add(CONTENT_ITEM_HOOK, (data) => data)
const hookedApi = testApp(db.url, {}, passThrough)
afterAll(async () => {
  await api.close()
  await hookedApi.close()
  await db.sql.end()
})

const LANGUAGES = ['en', 'fr', 'de']
const TYPES = ['post', 'page', 'recipe']
for (const code of LANGUAGES) await addLanguage(db.sql, code)

interface ModelEntry {
  id: number
  type: string
  status: 'draft' | 'scheduled' | 'published'
  publishedAt: Date | null
  translations: Record<string, TranslationFields>
}

async function generate(seed: number, count: number): Promise<ModelEntry[]> {
  await clearContent(db.sql)
  const rng = random(seed)
  // "Now" is the database's: it decides what is live (C1).
  const [{ now }] = await db.sql<{ now: Date }[]>`select now()`
  const at = (offsetMs: number) => new Date(now.getTime() + offsetMs)
  // Few distinct dates, so that ties are common; some null, some in the future.
  const dates = [null, at(-86_400_000), at(-3_600_000), at(-7_200_000), at(3_600_000)]
  const images = [
    await addImage(db.sql, 'uploads/a.jpg', { thumbnail: 'uploads/a-t.jpg', medium: 'uploads/a-m.jpg' }),
    await addImage(db.sql, 'https://cdn.example.org/b.jpg', { medium: 'uploads/b-m.jpg' }),
    await addImage(db.sql, 'uploads/c.jpg'),
  ]
  const terms = [await addTerm(db.sql, 'tag', 'One'), await addTerm(db.sql, 'tag', 'Two'), await addTerm(db.sql, 'category', 'Three')]
  const model: ModelEntry[] = []
  const perType = new Map<string, number>()
  for (let i = 0; i < count; i++) {
    const type = rng.pick(TYPES)
    // Counted per type, so that the same slugs exist in every type.
    const k = (perType.get(type) ?? 0) + 1
    perType.set(type, k)
    const status = rng.pick(['published', 'published', 'published', 'draft', 'scheduled'] as const)
    const publishedAt = rng.pick(dates)
    const translations: Record<string, TranslationFields> = {}
    // Some entries are written in the default language only: in any other language
    // they are reached through C19's fallback, the live ones and (never) the hidden ones.
    const defaultOnly = rng.next() < 0.25
    for (const language of LANGUAGES) {
      if (defaultOnly ? language === 'en' : rng.next() < 0.6) {
        // Unique within a type and language, so that every live item can be fetched;
        // shared across languages (an untranslated slug) and across types.
        const slug = rng.next() < 0.5 ? `entry-${k}` : `entry-${k}-${language}`
        translations[language] = { title: `${language} ${i}`, slug, excerpt: rng.next() < 0.3 ? null : `excerpt ${i}` }
      }
    }
    const imageId = rng.next() < 0.25 ? null : rng.pick(images)
    const termIds = terms.filter(() => rng.next() < 0.5)
    const id = await addEntry(db.sql, { type, status, publishedAt, translations, imageId, termIds })
    model.push({ id, type, status, publishedAt, translations })
  }
  return model
}

/** Every date of the generated content is an hour or more away from now: the clock cannot tip one over during a run. */
const isLive = (entry: ModelEntry) => entry.status === 'published' && (entry.publishedAt === null || entry.publishedAt.getTime() <= Date.now())

function listOrder(a: ModelEntry, b: ModelEntry): number {
  if (a.publishedAt && b.publishedAt && a.publishedAt.getTime() !== b.publishedAt.getTime()) return b.publishedAt.getTime() - a.publishedAt.getTime()
  if (a.publishedAt && !b.publishedAt) return -1
  if (!a.publishedAt && b.publishedAt) return 1
  return b.id - a.id
}

/** C19, written independently of the SQL. */
function lookUp(model: ModelEntry[], type: string, language: string, slug: string): ModelEntry | undefined {
  const live = model.filter((entry) => entry.type === type && isLive(entry)).sort((a, b) => a.id - b.id)
  return (
    live.find((entry) => entry.translations[language]?.slug === slug) ??
    live.find((entry) => !entry.translations[language] && entry.translations.en?.slug === slug)
  )
}

async function walk(type: string, language: string, perPage: number, client = api) {
  const items: any[] = []
  const first = await client.get(`/api/v1/content/${type}?lang=${language}&per_page=${perPage}`)
  items.push(...first.body.data)
  for (let page = 2; page <= first.body.meta.last_page + 1; page++) {
    const next = await client.get(`/api/v1/content/${type}?lang=${language}&per_page=${perPage}&page=${page}`)
    expect(next.body.meta.total).toBe(first.body.meta.total)
    items.push(...next.body.data)
  }
  return { items, total: first.body.meta.total as number }
}

describe('properties over generated content (C1, C2, C11, C14, C18, C19)', () => {
  for (const seed of [1, 2, 3]) {
    test(`seed ${seed}: every page walk yields exactly the live entries in order, every listed item is fetched by its own slug, and no hidden one by any`, async () => {
      const model = await generate(seed, 70)
      for (const type of TYPES) {
        const expected = model.filter((entry) => entry.type === type && isLive(entry)).sort(listOrder)
        for (const language of LANGUAGES) {
          const { items, total } = await walk(type, language, 1 + (seed % 4) * 3)
          expect(items.map((item) => item.id)).toEqual(expected.map((entry) => entry.id))
          expect(total).toBe(items.length)
          expect(await walk(type, language, 50, hookedApi)).toEqual({ items, total })
          for (const item of items) {
            const entry = model.find((candidate) => candidate.id === item.id)!
            const translation = entry.translations[language] ?? entry.translations.en ?? null
            expect([item.id, item.title, item.slug, item.excerpt]).toEqual([entry.id, translation?.title ?? null, translation?.slug ?? null, translation?.excerpt ?? null])
            if (item.slug === null) continue
            expect(lookUp(model, type, language, item.slug)?.id).toBe(item.id)
            const fetched = await api.get(`/api/v1/content/${type}/${encodeURIComponent(item.slug)}?lang=${language}`)
            expect(fetched.body.data).toEqual(item)
          }
        }
      }
      // No hidden entry is reachable through any of its slugs, in any language: its own
      // slug in that language, or its default-language slug where it has no row in that language.
      let throughFallback = 0
      for (const entry of model.filter((candidate) => !isLive(candidate))) {
        for (const language of LANGUAGES) {
          const slug = (entry.translations[language] ?? entry.translations.en)?.slug
          if (!slug) continue
          if (!entry.translations[language]) throughFallback++
          const response = await api.get(`/api/v1/content/${entry.type}/${encodeURIComponent(slug)}?lang=${language}`)
          const expected = lookUp(model, entry.type, language, slug)
          expect([entry.id, language, response.status, response.body.data?.id]).toEqual(
            [entry.id, language, expected ? 200 : 404, expected?.id],
          )
        }
      }
      expect(throughFallback).toBeGreaterThan(5)
    }, 60_000)
  }
})
