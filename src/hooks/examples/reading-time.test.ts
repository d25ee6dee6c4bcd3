import { afterAll, expect, test } from 'bun:test'
import { extensionTestKit } from '#vitrine/extension/testing'

const kit = await extensionTestKit({ extensions: `${import.meta.dir}/reading-time.ts` })
afterAll(() => kit.close())

// 1 000 words, each in its own tag: counted with the tags, they would make 2 000 "words" (10 minutes).
const thousandWords = `<article>${Array.from({ length: 1000 }, () => '<span class="w">word</span>').join(' ')}</article>`

test('counts the words of the body, tags left out', async () => {
  const item = await kit.item({ type: 'essay', translations: { en: { title: 'A long read', body: thousandWords } } })
  expect(item?.reading_minutes).toBe(5)
})

test('read in a language the entry lacks, counts the body the item shows: the default language’s', async () => {
  const item = await kit.item({ type: 'essay', translations: { en: { body: thousandWords }, fr: { body: '<p>Court.</p>' } } }, { language: 'de' })
  expect(item?.reading_minutes).toBe(5)
})

test('a short demo post takes a minute', async () => {
  expect(await kit.item({ type: 'post', slug: 'shipping-a-content-api' }, { language: 'fr' })).toMatchObject({ title: 'Shipping a content API (FR)', reading_minutes: 1 })
})
