import { Type, type Static } from '@sinclair/typebox'
import { t } from 'elysia'
import { ListMeta } from '../content/schemas'

/**
 * The TypeBox schemas of the discovery routes' answers (C46): the one source
 * of their types and of their place in the OpenAPI document. Closed objects,
 * as the content item's.
 */
const closed = { additionalProperties: false } as const

export const Language = Type.Object(
  {
    code: Type.String({ description: 'As in `?lang=`.', examples: ['fr'] }),
    name: Type.String({ examples: ['Français'] }),
    is_default: Type.Boolean({ description: "Exactly one language is the site's default." }),
  },
  closed,
)

export const ContentTypeSummary = Type.Object(
  {
    slug: Type.String({ description: 'The `{type}` of the content routes.', examples: ['post'] }),
    name: Type.String({ examples: ['Post'] }),
    total: Type.Integer({ minimum: 0, description: 'Live entries of the type, in any language: `meta.total` of its list (C18).' }),
  },
  closed,
)

export const Taxonomy = Type.Object(
  {
    slug: Type.String({ description: 'The `{taxonomy}` of the term list, and the part before `:` of `term`.', examples: ['tag'] }),
    name: Type.String({ examples: ['Tag'] }),
  },
  closed,
)

export const TermSummary = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String({ examples: ['PostgreSQL'] }),
    slug: Type.String({ examples: ['postgresql'] }),
    total: Type.Integer({
      minimum: 1,
      description: 'Live entries (of `type`, when given) that carry the term: `meta.total` of the list filtered by `term={taxonomy}:{slug}` (summed over the types without `type`).',
    }),
  },
  closed,
)

export const LanguageList = Type.Object({ data: Type.Array(Language) }, closed)
export const ContentTypeList = Type.Object({ data: Type.Array(ContentTypeSummary) }, closed)
export const TaxonomyList = Type.Object({ data: Type.Array(Taxonomy) }, closed)
export const TermList = Type.Object({ data: Type.Array(TermSummary), meta: ListMeta }, closed)
export type TermList = Static<typeof TermList>

// What Elysia reads from the request: page numbers stay strings (C6 answers a bad value with its own message).
export const TaxonomyParams = t.Object({ taxonomy: t.String() })
export const TermQuery = t.Object(
  { type: t.Optional(t.String()), page: t.Optional(t.String()), per_page: t.Optional(t.String()) },
  { additionalProperties: true },
)
