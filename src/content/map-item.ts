import type { Item } from './schemas'
import type { EntryRow } from './statement-fragments'

/**
 * Maps one entry row to the item of service.md §2.2: exactly the keys of C12
 * in their order (then `alternates` and `highlights`, when asked: C45, C55),
 * timestamps as in C13,
 * absolute media URLs as in C15. Pure.
 * @example toItem(row, 'https://cms.example.com/media')
 */
export function toItem(row: EntryRow, mediaBaseUrl: string): Item {
  const translation = row.translation
  const item: Item = {
    id: row.id,
    status: 'published',
    published_at: row.published_at === null ? null : formatTimestamp(row.published_at),
    created_at: formatTimestamp(row.created_at),
    author: row.author === null ? null : { id: row.author.id, name: row.author.name },
    title: translation?.title ?? null,
    slug: translation?.slug ?? null,
    excerpt: translation?.excerpt ?? null,
    meta_title: translation?.meta_title ?? null,
    meta_description: translation?.meta_description ?? null,
    featured_image: row.image === null ? null : toFeaturedImage(row.image, mediaBaseUrl),
    terms: row.terms.map((term) => ({ id: term.id, name: term.name, slug: term.slug })),
  }
  // C45: only when the statement was asked for them.
  if (row.alternates !== undefined) item.alternates = row.alternates.map((alternate) => ({ language: alternate.language, slug: alternate.slug }))
  // C55: when asked; null without a search.
  if (row.highlights !== undefined) item.highlights = row.highlights === null ? null : { title: row.highlights.title, excerpt: row.highlights.excerpt }
  return item
}

/**
 * C44: each item with only the keys `fields` names, in the item's own order
 * (the chain's output order); a null item stays null; no `fields`: the items
 * as they are. Pure.
 * @example selectFields([{ id: 1, title: 'Hi', slug: 'hi' }, null], ['slug', 'id']) // [{ id: 1, slug: 'hi' }, null]
 */
export function selectFields<Data extends object>(items: readonly (Data | null)[], fields: readonly string[] | null): readonly (Partial<Data> | null)[] {
  if (fields === null) return items
  return items.map((item) => {
    if (item === null) return null
    // No prototype: an extension may declare a key called "constructor" or "__proto__".
    const selected: Record<string, unknown> = Object.create(null)
    for (const [key, value] of Object.entries(item)) if (fields.includes(key)) selected[key] = value
    return selected as Partial<Data>
  })
}

/**
 * C13: RFC 3339 in UTC, to the second, with a numeric offset.
 * @example formatTimestamp(1767259800) // '2026-01-01T09:30:00+00:00'
 */
export function formatTimestamp(unixSeconds: number): string {
  // Twice an item and once a model (issue 45), and the same entries' timestamps again on every request
  // for the same pages: a string made once is handed out again, already hashed for C31's format check
  // (item-schema.ts), which remembers valid values in a Set.
  const known = formattedTimestamps.get(unixSeconds)
  if (known !== undefined) return known
  // What the statements never send (they floor and clamp: epochSeconds) is formatted as it always was.
  if (!Number.isInteger(unixSeconds) || unixSeconds < FIRST_SECOND || unixSeconds > LAST_SECOND) return `${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}+00:00`
  const formatted = formatWholeSeconds(unixSeconds)
  if (formattedTimestamps.size >= REMEMBERED_TIMESTAMPS) formattedTimestamps.clear()
  formattedTimestamps.set(unixSeconds, formatted)
  return formatted
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range epochSeconds clamps to. */
const FIRST_SECOND = -62_135_596_800
const LAST_SECOND = 253_402_300_799

/** How many formatted timestamps formatTimestamp keeps before it starts over. */
const REMEMBERED_TIMESTAMPS = 10_000
const formattedTimestamps = new Map<number, string>()

/**
 * Whole seconds (epochSeconds floors them) in years 0001-9999 (it clamps them), by arithmetic rather
 * than a Date and its ISO string: the same string as
 * `new Date(unixSeconds * 1000).toISOString().slice(0, 19) + '+00:00'` (test/map-item.test.ts).
 */
function formatWholeSeconds(unixSeconds: number): string {
  const days = Math.floor(unixSeconds / 86_400)
  const second = unixSeconds - days * 86_400
  const hour = Math.floor(second / 3_600)
  const minute = Math.floor((second % 3_600) / 60)
  const { year, month, day } = civilDate(days)
  return `${TWO_DIGITS[Math.floor(year / 100)]}${TWO_DIGITS[year % 100]}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[second % 60]}+00:00`
}

/** '00' to '99'. */
const TWO_DIGITS = Array.from({ length: 100 }, (_, value) => String(value).padStart(2, '0'))

/**
 * The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
 * https://howardhinnant.github.io/date_algorithms.html): eras of 400 years from 0000-03-01.
 */
function civilDate(days: number): { year: number; month: number; day: number } {
  const shifted = days + 719_468
  const era = Math.floor(shifted / 146_097)
  const dayOfEra = shifted - era * 146_097
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365)
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153)
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day: dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1 }
}

/**
 * C15: an absolute http(s) URL stays as it is; any other path is joined to the
 * media base URL with exactly one slash.
 * @example mediaUrl('uploads/cat.jpg', 'https://cms.example.com/media') // 'https://cms.example.com/media/uploads/cat.jpg'
 */
export function mediaUrl(path: string, mediaBaseUrl: string): string {
  if (/^https?:\/\//i.test(path)) return path
  // Three times an item: the base is trimmed once for as long as it stays the same, a path only when it starts with a slash.
  if (mediaBaseUrl !== trimmedBase.of) trimmedBase = { of: mediaBaseUrl, trimmed: mediaBaseUrl.replace(/\/+$/, '') }
  return `${trimmedBase.trimmed}/${path.charCodeAt(0) === 47 ? path.replace(/^\/+/, '') : path}`
}

/** The last media base URL mediaUrl was given, without its trailing slashes. */
let trimmedBase = { of: '', trimmed: '' }

function toFeaturedImage(image: NonNullable<EntryRow['image']>, mediaBaseUrl: string): Item['featured_image'] {
  const url = mediaUrl(image.path, mediaBaseUrl)
  return {
    url,
    // service.md §2.2 rule 1: a variant not generated yet is the original.
    thumbnail: image.thumbnail === null ? url : mediaUrl(image.thumbnail, mediaBaseUrl),
    medium: image.medium === null ? url : mediaUrl(image.medium, mediaBaseUrl),
  }
}
