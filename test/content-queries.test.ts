import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestDatabase } from './support/database'
import { testApp } from './support/app'
import { addAuthor, addEntry, addImage, addLanguage, addTerm } from './support/fixtures'

const db = await createTestDatabase()
const api = testApp(db.url)
afterAll(async () => {
  await api.close()
  await db.sql.end()
})

beforeAll(async () => {
  await addLanguage(db.sql, 'fr')
  const author = await addAuthor(db.sql, 'Ada')
  const image = await addImage(db.sql, 'uploads/a.jpg', { thumbnail: 'uploads/a-t.jpg' })
  const terms = [await addTerm(db.sql, 'tag', 'One'), await addTerm(db.sql, 'tag', 'Two')]
  for (let i = 0; i < 120; i++) {
    await addEntry(db.sql, {
      authorId: i % 2 ? author : null,
      imageId: i % 3 ? image : null,
      termIds: i % 4 ? terms : [],
      translations: { en: { title: `T${i}`, slug: `t-${i}` }, ...(i % 2 ? { fr: { title: `F${i}`, slug: `f-${i}` } } : {}) },
    })
  }
  // About 600 commits: on a server that syncs each to disk, with the writers' triggers of 0003–0007, past bun's 5 s on a busy machine.
}, 60_000)

describe('one statement per request', () => {
  for (const perPage of [1, 20, 100]) {
    test(`list with per_page=${perPage} sends exactly one statement`, async () => {
      api.statements.length = 0
      const response = await api.get(`/api/v1/content/post?per_page=${perPage}&lang=fr`)
      expect(response.body.data).toHaveLength(perPage)
      expect(api.statements).toHaveLength(1)
    })
  }

  test('a single entry sends exactly one statement, found or not', async () => {
    for (const path of ['/api/v1/content/post/f-3?lang=fr', '/api/v1/content/post/missing', '/api/v1/content/nope/x']) {
      api.statements.length = 0
      await api.get(path)
      expect([path, api.statements.length]).toEqual([path, 1])
    }
  })
})
