import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * The TypeBox schemas of the content API: the one source of its TypeScript
 * types and of its OpenAPI document. Item keys are in the order of C12.
 */
// Elysia's t.Integer also accepts numeric strings (for coercing input); output ids are plain integers.
const Integer = (options?: Parameters<typeof Type.Integer>[0]) => Type.Integer(options)

const Timestamp = t.String({ format: 'date-time', examples: ['2026-01-01T09:30:00+00:00'] })

export const Author = t.Object({ id: Integer(), name: t.String() })

export const FeaturedImage = t.Object({
  url: t.String({ examples: ['https://cms.example.com/media/uploads/2026/cat.jpg'] }),
  thumbnail: t.String(),
  medium: t.String(),
})

export const Term = t.Object({ id: Integer(), name: t.String(), slug: t.String() })

export const Item = t.Object(
  {
    id: Integer(),
    status: t.Literal('published'),
    published_at: t.Nullable(Timestamp),
    created_at: Timestamp,
    author: t.Nullable(Author),
    title: t.Nullable(t.String()),
    slug: t.Nullable(t.String()),
    excerpt: t.Nullable(t.String()),
    meta_title: t.Nullable(t.String()),
    meta_description: t.Nullable(t.String()),
    featured_image: t.Nullable(FeaturedImage),
    terms: t.Array(Term),
  },
  {
    // Extensions may add fields through the filter hook `service/api/content-item`.
    additionalProperties: true,
    description: 'A published content entry. Extensions may add fields, or remove them.',
    examples: [
      {
        id: 42,
        status: 'published',
        published_at: '2026-01-01T09:30:00+00:00',
        created_at: '2025-12-30T16:02:11+00:00',
        author: { id: 3, name: 'Ada Lindqvist' },
        title: 'Shipping a content API',
        slug: 'shipping-a-content-api',
        excerpt: 'What we learned building Vitrine.',
        meta_title: 'Shipping a content API | Example',
        meta_description: 'What we learned building Vitrine.',
        featured_image: {
          url: 'https://cms.example.com/media/uploads/2026/cat.jpg',
          thumbnail: 'https://cms.example.com/media/uploads/2026/cat-thumbnail.jpg',
          medium: 'https://cms.example.com/media/uploads/2026/cat.jpg',
        },
        terms: [{ id: 7, name: 'Engineering', slug: 'engineering' }],
      },
    ],
  },
)
export type Item = typeof Item.static

export const ListMeta = t.Object({
  current_page: Integer({ minimum: 1 }),
  last_page: Integer({ minimum: 1 }),
  per_page: Integer({ minimum: 1, maximum: 100 }),
  total: Integer({ minimum: 0 }),
})

// An item is null when a filter callback made it so (C26).
export const ListResponse = t.Object({ data: t.Array(t.Nullable(Item)), meta: ListMeta })
export const ShowResponse = t.Object({ data: t.Nullable(Item) })
export const ErrorResponse = t.Object({ error: t.String() })

export const TypeParams = t.Object({ type: t.String({ description: 'A content type slug: page, post, or a custom type.' }) })
export const EntryParams = t.Object({
  type: t.String({ description: 'A content type slug: page, post, or a custom type.' }),
  slug: t.String({ description: "The entry's slug in the selected language (or its default-language slug when it has no translation in it)." }),
})

const Lang = t.String({ description: "A configured language code; the site's default language when absent or unknown.", examples: ['fr'] })

// Page numbers stay strings here: C6 answers a bad value with its own message.
export const ListQuery = t.Object(
  {
    page: t.Optional(t.String({ description: 'Page number, a positive integer. Default 1.', examples: ['2'] })),
    per_page: t.Optional(t.String({ description: 'Items per page, a positive integer. Default 20, at most 100 (larger values are clamped).', examples: ['20'] })),
    lang: t.Optional(Lang),
  },
  { additionalProperties: true },
)
export const ShowQuery = t.Object({ lang: t.Optional(Lang) }, { additionalProperties: true })
