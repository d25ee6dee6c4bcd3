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
  return `${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}+00:00`
}

/**
 * C15: an absolute http(s) URL stays as it is; any other path is joined to the
 * media base URL with exactly one slash.
 * @example mediaUrl('uploads/cat.jpg', 'https://cms.example.com/media') // 'https://cms.example.com/media/uploads/cat.jpg'
 */
export function mediaUrl(path: string, mediaBaseUrl: string): string {
  if (/^https?:\/\//i.test(path)) return path
  return `${mediaBaseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`
}

function toFeaturedImage(image: NonNullable<EntryRow['image']>, mediaBaseUrl: string): Item['featured_image'] {
  const url = mediaUrl(image.path, mediaBaseUrl)
  return {
    url,
    // service.md §2.2 rule 1: a variant not generated yet is the original.
    thumbnail: image.thumbnail === null ? url : mediaUrl(image.thumbnail, mediaBaseUrl),
    medium: image.medium === null ? url : mediaUrl(image.medium, mediaBaseUrl),
  }
}
