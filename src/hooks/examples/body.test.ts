import { afterAll, expect, test } from 'bun:test'
import { extensionTestKit } from '#vitrine/extension/testing'

const kit = await extensionTestKit({ extensions: `${import.meta.dir}/body.ts` })
afterAll(() => kit.close())

const greeting = { translations: { en: { title: 'Hello', body: '<p>English body</p>' }, fr: { title: 'Bonjour', body: '<p>Corps</p>' } } }

test('adds the body of the translation the item shows', async () => {
  expect(await kit.item(greeting, { language: 'fr' })).toMatchObject({ title: 'Bonjour', body: '<p>Corps</p>' })
})

test('in a language the entry lacks, the default language’s body, as its title', async () => {
  expect(await kit.item(greeting, { language: 'de' })).toMatchObject({ title: 'Hello', body: '<p>English body</p>' })
})

test('a translation without a body: null', async () => {
  expect((await kit.item({ translations: { de: { title: 'Nur Deutsch' } } }, { language: 'de' }))?.body).toBeNull()
})
