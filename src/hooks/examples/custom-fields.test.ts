import { afterAll, expect, test } from 'bun:test'
import { extensionTestKit } from '#vitrine/extension/testing'

const kit = await extensionTestKit({ extensions: `${import.meta.dir}/custom-fields.ts` })
afterAll(() => kit.close())

const subtitled = {
  translations: { en: { title: 'Hello' }, fr: { title: 'Bonjour' } },
  fieldValues: [
    { key: 'subtitle', value: 'An English subtitle', language: 'en' },
    { key: 'subtitle', value: 'Un sous-titre', language: 'fr' },
    { key: 'rating', value: 5, type: 'number' },
  ],
}

test('the selected language’s value, else the untranslated one', async () => {
  expect((await kit.item(subtitled, { language: 'fr' }))?.fields).toEqual({ rating: 5, subtitle: 'Un sous-titre' })
})

test('a language with no value of its own: the default language’s', async () => {
  expect((await kit.item(subtitled, { language: 'de' }))?.fields).toEqual({ rating: 5, subtitle: 'An English subtitle' })
})

test('an entry without values: an empty object', async () => {
  expect((await kit.item({ translations: { de: { title: 'Nur Deutsch' } } }, { language: 'de' }))?.fields).toEqual({})
})

test('a demo project: its client, year and summary', async () => {
  expect((await kit.item({ type: 'project', slug: 'harbour-museum-website' }, { language: 'fr' }))?.fields).toEqual({
    client: 'Harbour Museum',
    year: 2024,
    summary: 'Harbour museum website pour Harbour Museum.',
  })
})
