import { afterAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { testApp, type TestApp } from './support/app'
import { addAuthor, addEntry, addImage, addLanguage, addTerm, type TranslationFields } from './support/fixtures'
import { readingTime, registryOf } from './support/openapi'
import { documentChecker } from './support/openapi-validation'
import { random } from './support/random'
import { generateRequests } from './support/request-corpus'

/**
 * Generated requests, each answer checked against the document the same
 * instance serves, by Ajv (JSON Schema 2020-12): status documented, body
 * valid, documented headers present when required and well-formed. Once
 * without extensions, once with one that adds a field, removes one for some
 * requests and withholds some items.
 */
const REQUESTS_PER_INSTANCE = 300
const db = await createTestDatabase()
const plain = testApp(db.url)
const extended = testApp(db.url, {}, await registryOf(readingTime))
afterAll(async () => {
  await plain.close()
  await extended.close()
  await db.sql.end()
})

const LANGUAGES = ['en', 'fr', 'de']
const TYPES = ['post', 'page', 'recipe']
const slugs: string[] = []
{
  const rng = random(12)
  for (const code of LANGUAGES) await addLanguage(db.sql, code)
  const authors = [await addAuthor(db.sql, 'Ada'), await addAuthor(db.sql, 'Grace')]
  const images = [await addImage(db.sql, 'uploads/a.jpg', { thumbnail: 'uploads/a-t.jpg' }), await addImage(db.sql, 'https://cdn.example.org/b.jpg')]
  const terms = [await addTerm(db.sql, 'tag', 'One'), await addTerm(db.sql, 'category', 'Two')]
  const now = Date.now()
  for (let i = 1; i <= 45; i++) {
    const translations: Record<string, TranslationFields> = {}
    for (const code of LANGUAGES) {
      if (rng.next() < 0.4) continue
      const slug = `${code}-entry-${i}`
      slugs.push(slug)
      translations[code] = {
        title: rng.next() < 0.9 ? `Entry ${i} (${code})` : null,
        slug,
        excerpt: rng.next() < 0.7 ? `About ${i}` : null,
        body: rng.next() < 0.8 ? `<p>${'word '.repeat(Math.floor(rng.next() * 900))}</p>` : null,
      }
    }
    await addEntry(db.sql, {
      type: rng.pick(TYPES),
      status: rng.pick(['published', 'published', 'published', 'draft', 'scheduled'] as const),
      publishedAt: rng.pick([null, new Date(now - 86_400_000), new Date(now - 3_600_000), new Date(now + 3_600_000)]),
      authorId: rng.pick([null, ...authors]),
      imageId: rng.pick([null, ...images]),
      termIds: rng.next() < 0.5 ? terms : [],
      translations,
    })
  }
}

async function checkCorpus(api: TestApp, seed: number) {
  const document = (await api.get('/api/v1/openapi.json')).body
  const check = documentChecker(document)
  const problems: string[] = []
  const statuses = new Map<number, number>()
  const items: any[] = []
  for (const request of generateRequests(seed, REQUESTS_PER_INSTANCE, { types: TYPES, languages: LANGUAGES, slugs })) {
    const response = await api.get(request.url, { method: request.method.toUpperCase(), headers: request.headers })
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    for (const problem of check(request.method, request.template, response)) problems.push(`${request.method.toUpperCase()} ${request.url}: ${problem}`)
    if (response.status === 200 && request.template.startsWith('/api/v1/content/')) items.push(...[response.body.data].flat())
  }
  return { problems, statuses, items }
}

describe('a corpus of generated requests, each answer validated against the served document (Ajv, JSON Schema 2020-12)', () => {
  test(`without extensions: ${REQUESTS_PER_INSTANCE} requests, every answer matches`, async () => {
    const { problems, statuses, items } = await checkCorpus(plain, 1)
    expect(problems).toEqual([])
    // The corpus reaches every documented status but the faults.
    expect([...statuses.keys()].sort()).toEqual([200, 400, 404, 405])
    expect(items.filter((item) => item !== null).length).toBeGreaterThan(100)
  })

  test(`with an extension that adds and removes keys and withholds items: ${REQUESTS_PER_INSTANCE} requests, every answer matches`, async () => {
    const { problems, statuses, items } = await checkCorpus(extended, 2)
    expect(problems).toEqual([])
    expect([...statuses.keys()].sort()).toEqual([200, 400, 404, 405])
    const shown = items.filter((item) => item !== null && 'reading_time_minutes' in item)
    expect(shown.some((item) => 'excerpt' in item)).toBe(true)
    expect(shown.some((item) => !('excerpt' in item))).toBe(true)
    expect(items).toContain(null)
  })

  test('the checker is not blind: an answer off the document is reported', async () => {
    const document = (await plain.get('/api/v1/openapi.json')).body
    const check = documentChecker(document)
    const answer = (status: number, body: unknown, headers: Record<string, string> = { 'x-request-id': 'abc' }) => ({ status, headers: new Headers(headers), text: JSON.stringify(body) })
    const item = (await plain.get('/api/v1/content/post')).body.data[0]
    expect(check('get', '/api/v1/content/{type}/{slug}', answer(200, { data: { ...item, extra: 1 } }))[0]).toContain('must NOT have additional properties')
    expect(check('get', '/api/v1/content/{type}/{slug}', answer(200, { data: { ...item, id: '1' } }))[0]).toContain('must be integer')
    expect(check('get', '/api/v1/content/{type}/{slug}', answer(405, { error: 'x' }))).toEqual(['get /api/v1/content/{type}/{slug} answered 405, which is not documented'])
    // C44: an item with keys missing is valid only as a selection, which has no key of its own either.
    expect(check('get', '/api/v1/content/{type}/{slug}', answer(200, { data: { id: item.id, title: item.title } })).filter((problem) => problem.startsWith('body'))).toEqual([])
    expect(check('get', '/api/v1/content/{type}/{slug}', answer(200, { data: { id: item.id, extra: 1 } }))[0]).toContain('must NOT have additional properties')
    expect(check('get', '/api/v1/content/{type}', answer(503, { error: 'Service unavailable.' }))).toEqual(['header Retry-After is required and missing', 'header Cache-Control is required and missing'])
    expect(check('get', '/api/v1/content/{type}', answer(404, { error: 'Content type not found.' }, {}))).toEqual([
      'header X-Request-Id is required and missing',
      'header ETag is required and missing',
      'header Cache-Control is required and missing',
      'header Surrogate-Key is required and missing',
      'header X-Cache is required and missing',
    ])
  })
})
