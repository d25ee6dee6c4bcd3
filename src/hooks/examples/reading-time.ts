import { countWords, defineExtension, t } from '#vitrine/extension'

/** Adds `reading_minutes`: the words of the body the item shows, at 200 a minute, at least 1. */
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, content) => {
    // The body of the translation the item shows (an English-only entry read in French has its English
    // body); it is HTML, and countWords skips its tags.
    const words = countWords(content.shownTranslation?.body ?? '')
    return { ...data, reading_minutes: Math.max(1, Math.round(words / 200)) }
  }, { reads: ['shownTranslation'], schema: { add: { reading_minutes: t.Integer() } } })
})
