import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * The TypeBox schemas of the content API's responses: the one source of their
 * TypeScript types and of the OpenAPI document (./openapi-paths.ts).
 * Plain TypeBox, not Elysia's `t`: its `t.Integer` also accepts numeric strings,
 * which is right for reading a query string and wrong for describing output.
 * Objects are closed: an item has exactly the keys of C12, in that order (and
 * `alternates` and `highlights` when asked, C45 and C55), and extensions declare what they change
 * (src/hooks/item-schema.ts).
 */
const Nullable = <T extends TSchema>(schema: T, options: { description?: string } = {}) => Type.Union([schema, Type.Null()], options)
const closed = { additionalProperties: false } as const

const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 in UTC, to the second (C13).', examples: ['2026-01-01T09:30:00+00:00'] })

export const Author = Type.Object({ id: Type.Integer(), name: Type.String() }, closed)

export const FeaturedImage = Type.Object(
  {
    url: Type.String({ description: 'The original image, an absolute URL.', examples: ['https://cms.example.com/media/uploads/2026/cat.jpg'] }),
    thumbnail: Type.String({ description: 'The thumbnail variant; `url` until it is generated.' }),
    medium: Type.String({ description: 'The medium variant; `url` until it is generated.' }),
  },
  closed,
)

export const Term = Type.Object({ id: Type.Integer(), name: Type.String(), slug: Type.String() }, closed)

export const Alternate = Type.Object(
  {
    language: Type.String({ description: 'A configured language code: pass it as `lang`.', examples: ['fr'] }),
    slug: Type.String({ description: "The entry's slug in that language.", examples: ['livrer-une-api-de-contenu'] }),
  },
  closed,
)

export const Highlights = Type.Object(
  {
    title: Nullable(
      Type.String({
        description: 'The title, HTML-escaped, each word that matches the search wrapped in `<mark>` and `</mark>`: the only markup. Null when the title is.',
        examples: ['Shipping a <mark>content</mark> API &amp; more'],
      }),
    ),
    excerpt: Nullable(Type.String({ description: 'The excerpt, as `title`.', examples: ['What we learned building Vitrine.'] })),
  },
  closed,
)

export const Item = Type.Object(
  {
    id: Type.Integer(),
    status: Type.Literal('published'),
    published_at: Nullable(Timestamp),
    created_at: Timestamp,
    author: Nullable(Author),
    title: Nullable(Type.String()),
    slug: Nullable(Type.String()),
    excerpt: Nullable(Type.String()),
    meta_title: Nullable(Type.String()),
    meta_description: Nullable(Type.String()),
    featured_image: Nullable(FeaturedImage),
    terms: Type.Array(Term, { description: 'In the order the entry gives them.' }),
    alternates: Type.Optional(
      Type.Array(Alternate, {
        description:
          'Only with `include=alternates` (C45): the entry in each language it has a slug in, the selected one included, by language code. ' +
          'Each one is `GET /api/v1/content/{type}/{slug}?lang={language}`.',
      }),
    ),
    highlights: Type.Optional(
      Nullable(Highlights, {
        description:
          'Only with `include=highlights` (C55): why a search found the item. Null without `search` (and always on the single-entry route).',
      }),
    ),
  },
  {
    ...closed,
    description: 'A published content entry. Translated fields come from the selected language, else from the default language (C14).',
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
        alternates: [
          { language: 'en', slug: 'shipping-a-content-api' },
          { language: 'fr', slug: 'livrer-une-api-de-contenu' },
        ],
        highlights: { title: 'Shipping a <mark>content</mark> API', excerpt: 'What we learned building Vitrine.' },
      },
    ],
  },
)
export type Item = Static<typeof Item>

export const ListMeta = Type.Object(
  {
    current_page: Type.Integer({ minimum: 1, description: 'The page asked for, even past the last one (C8).' }),
    last_page: Type.Integer({ minimum: 1 }),
    per_page: Type.Integer({ minimum: 1, maximum: 100, description: 'The page size in effect, after clamping (C7).' }),
    total: Type.Integer({ minimum: 0, description: 'Live entries of the type, in any language (C18).' }),
  },
  closed,
)

export const ErrorBody = Type.Object({ error: Type.String() }, { ...closed, examples: [{ error: 'Not found.' }] })

/**
 * C44: an item of an answer asked with `fields`: the keys of `item`, each one
 * there only when named.
 * @example itemSelection(Item).required // undefined
 */
export const itemSelection = (item: TObject) =>
  Type.Object(
    Object.fromEntries(Object.entries(item.properties).map(([key, schema]) => [key, Type.Optional(schema)])),
    { ...closed, description: 'An item asked with `fields` (C44): only the keys named, in their usual order.' },
  )

/** The list envelope (§2.3) around an item shape; an item is null when a callback made it so (C26). */
export const listBody = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(Nullable(item)), meta: ListMeta }, closed)
/** The single-entry envelope (§2.4) around an item shape. */
export const showBody = <T extends TSchema>(item: T) => Type.Object({ data: Nullable(item) }, closed)
/** A sync page (C48): items as in lists, the ids gone from the type, and where to go on. */
export const syncBody = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      data: Type.Array(Nullable(item)),
      deleted: Type.Array(Type.Integer(), { description: 'Ids of entries that stopped being live in the type, or were removed.' }),
      meta: Type.Object(
        {
          next_page_url: Nullable(Type.String({ description: 'The next page of this sync; null on the last page.' })),
          next_sync_url: Nullable(Type.String({ description: 'On the last page only: the URL to ask later for what changed.' })),
        },
        closed,
      ),
    },
    closed,
  )
export type ListBody = Static<ReturnType<typeof listBody<typeof Item>>>
export type ShowBody = Static<ReturnType<typeof showBody<typeof Item>>>

// What Elysia reads from the request. Page numbers stay strings here: C6 answers
// a bad value with its own message (src/content/parameters.ts).
export const TypeParams = t.Object({ type: t.String() })
export const EntryParams = t.Object({ type: t.String(), slug: t.String() })
export const ListQuery = t.Object(
  {
    page: t.Optional(t.String()),
    per_page: t.Optional(t.String()),
    lang: t.Optional(t.String()),
    after: t.Optional(t.String()),
    term: t.Optional(t.String()),
    author: t.Optional(t.String()),
    search: t.Optional(t.String()),
    order: t.Optional(t.String()),
    fields: t.Optional(t.String()),
    include: t.Optional(t.String()),
  },
  { additionalProperties: true },
)
export const ShowQuery = t.Object({ lang: t.Optional(t.String()), fields: t.Optional(t.String()), include: t.Optional(t.String()) }, { additionalProperties: true })
