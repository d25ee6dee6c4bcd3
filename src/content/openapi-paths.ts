import { Type, type TObject } from '@sinclair/typebox'
import { CONTENT_ANSWER, EVERY_ANSWER, errorResponse, headers, json, pathParameter, ref, type OpenApiDeclaration } from '../http/openapi-declarations'
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, MAX_SEARCH_LENGTH, MAX_TERM_PAIRS } from './parameters'
import { LIST_PATH, SHOW_PATH } from './routes'
import { Alternate, Author, FeaturedImage, Highlights, ListMeta, Term, itemSelection, listBody, showBody } from './schemas'

/**
 * The content routes in the OpenAPI document: their paths, the item as the
 * installed extensions declare it (`itemSchema`), its parameters and the 400
 * of a list. Change it with routes.ts.
 * @example contentOpenApi(registry.itemSchema).paths['/api/v1/content/:type']
 */
export function contentOpenApi(itemSchema: TObject): OpenApiDeclaration {
  const selection = itemSelection(itemSchema)
  // C44: an answer's items are whole, or hold the keys `fields` named.
  const anyItem = Type.Union([itemSchema, selection])
  const itemKeys = Object.keys(itemSchema.properties)
  const contentHeaders = headers(...CONTENT_ANSWER)
  return {
    schemas: {
      ContentItem: itemSchema,
      ContentItemFields: selection,
      Author,
      FeaturedImage,
      Term,
      Alternate,
      Highlights,
      ListMeta,
      ContentList: listBody(anyItem),
      ContentEntry: showBody(anyItem),
    },
    paths: {
      [LIST_PATH]: {
        parameters: [ref('parameters', 'ContentType')],
        get: {
          operationId: 'listContent',
          'x-route-name': 'service.api.content.index',
          tags: ['content'],
          summary: 'List published entries of a content type',
          description:
            'Live entries only (published, and their publication time has come), newest first: `published_at` descending with undated entries last, then `id` descending.',
          parameters: [
            ref('parameters', 'Page'),
            ref('parameters', 'PerPage'),
            ref('parameters', 'After'),
            ref('parameters', 'Lang'),
            ref('parameters', 'Term'),
            ref('parameters', 'Author'),
            ref('parameters', 'Search'),
            ref('parameters', 'Order'),
            ref('parameters', 'Fields'),
            ref('parameters', 'Include'),
            ref('parameters', 'IfNoneMatch'),
          ],
          responses: {
            '200': {
              description: 'A page of entries; past the last page, `data` is empty. `Link` says where the walk goes on (C39).',
              headers: headers(...CONTENT_ANSWER, 'Link'),
              ...json(ref('schemas', 'ContentList')),
            },
            '304': ref('responses', 'NotModified'),
            '400': ref('responses', 'BadParameter'),
            '404': errorResponse('The content type does not exist.', ['Content type not found.'], CONTENT_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        refusedAs: 'ContentList',
      },
      [SHOW_PATH]: {
        parameters: [ref('parameters', 'ContentType'), ref('parameters', 'Slug')],
        get: {
          operationId: 'getContent',
          'x-route-name': 'service.api.content.show',
          tags: ['content'],
          summary: 'Get one published entry by slug',
          description:
            'The live entry whose slug in the selected language matches; else one with no translation in that language whose default-language slug matches. The lowest id wins a tie.',
          parameters: [ref('parameters', 'Lang'), ref('parameters', 'Fields'), ref('parameters', 'Include'), ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': { description: 'The entry; `data` is null when an extension withheld it.', headers: contentHeaders, ...json(ref('schemas', 'ContentEntry')) },
            '304': ref('responses', 'NotModified'),
            '400': errorResponse('`fields` names a key an item cannot have, or `include` is not a list of `alternates` and `highlights`.', ITEM_SHAPE_MESSAGES, [...EVERY_ANSWER, 'Cache-Control']),
            '404': errorResponse('The content type does not exist (checked first), or no live entry of it has this slug.', ['Content type not found.', 'Not found.'], CONTENT_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        refusedAs: 'Content',
      },
    },
    parameters: {
      // Each parameter's `example` is what the reference page (/docs) fills in and sends, all of them together: as a set
      // they find an entry of the demo (src/demo/seed-demo.ts), a French post in Engineering by the first author. `after`
      // and `If-None-Match` have none: their values come from an earlier answer, and `after` is refused with `page`.
      ContentType: pathParameter('type', 'A content type slug: `page`, `post`, or a custom type. Case-sensitive.', 'post'),
      Slug: pathParameter('slug', "The entry's slug in the selected language (or its default-language slug when it has no translation in it).", 'why-we-cache-at-the-edge-fr'),
      Page: {
        name: 'page',
        in: 'query',
        description: 'The page number, in decimal digits. Anything else is a 400.',
        schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 },
      },
      PerPage: {
        name: 'per_page',
        in: 'query',
        description: `Entries per page, in decimal digits. A value above ${MAX_PER_PAGE} is clamped to ${MAX_PER_PAGE} (\`meta.per_page\` shows the value in effect); anything else is a 400.`,
        schema: { type: 'integer', minimum: 1, default: DEFAULT_PER_PAGE },
      },
      After: {
        name: 'after',
        in: 'query',
        description:
          'An opaque cursor, from the `next` link of a list answer (C39): the page that continues right after the last entry of that answer, at the same cost at any depth. ' +
          '`meta.current_page` then shows the number of the page it opens. Not with `page`.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$', maxLength: 200, examples: ['WzIsIjE3NjczMDA2MDAwMDAwMDAiLDQyXQ'] },
      },
      Term: {
        name: 'term',
        in: 'query',
        description:
          `Only entries that carry a term of every \`taxonomy:slug\` pair (C40), at most ${MAX_TERM_PAIRS} pairs, comma-separated. ` +
          'A taxonomy or term that does not exist, or that no live entry carries, gives an empty list (200), never a 404. ' +
          '`meta.total` counts the filtered entries exactly; `Link` URLs keep the pairs. One pair costs the same at any size of site.',
        example: 'category:engineering',
        schema: { type: 'string', pattern: '^[^,:]+:[^,]+(,[^,:]+:[^,]+)*$', examples: ['category:engineering', 'category:engineering,tag:postgresql'] },
      },
      Author: {
        name: 'author',
        in: 'query',
        description: "Only entries by this author (`author.id`), in decimal digits (C41). An author with no live entries gives an empty list.",
        example: 1,
        schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
      },
      Search: {
        name: 'search',
        in: 'query',
        description:
          `Full-text search (C42) in the title, excerpt and body of the translation each entry shows, with that language's stemming (PostgreSQL's \`websearch_to_tsquery\`: words, "quoted phrases", \`or\`, \`-word\`). ` +
          `At most ${MAX_SEARCH_LENGTH} characters; blank is as if absent. Results come by relevance (a match in the title counts most, then the excerpt, then the body) unless \`order=date\`. ` +
          'As the user types (C55): the last word, when bare (not quoted, not negated, no space after it) and of at least 2 letters or digits, also matches as a prefix (`archi` finds "architecture"); exact words rank above prefix matches.',
        example: 'cache',
        schema: { type: 'string', maxLength: MAX_SEARCH_LENGTH, examples: ['cache', '"cache invalidation" -redis', 'archi'] },
      },
      Order: {
        name: 'order',
        in: 'query',
        description: '`relevance` (the default with `search`, and only with it) or `date` (list order: newest first). Cursors walk either.',
        example: 'date',
        schema: { type: 'string', enum: ['relevance', 'date'] },
      },
      Fields: {
        name: 'fields',
        in: 'query',
        description:
          'Comma-separated item keys (C44): each item then holds only those, in their usual order, after the extensions ran. ' +
          `The keys: ${itemKeys.map((key) => `\`${key}\``).join(', ')} (the default ones, \`alternates\`, \`highlights\`, and those the installed extensions declare they add). ` +
          'Naming `alternates` or `highlights` includes them (as `include` does). Blanks and empty entries are skipped; none at all is as if absent. Any other key is a 400.',
        example: 'id,slug,title,alternates',
        schema: { type: 'string', pattern: fieldsPattern(itemKeys), examples: ['id,slug,title', 'id,slug,title,alternates'] },
      },
      Include: {
        name: 'include',
        in: 'query',
        description:
          'A comma-separated list of `alternates` and `highlights`. ' +
          "`alternates` (C45): each item gains `alternates` after `terms`, the entry's slug in every language it has one in (the selected one included), by language code: " +
          'what a language switcher and `hreflang` links need. ' +
          '`highlights` (C55): each item gains `highlights` after `terms` (and `alternates`): with `search`, `{ title, excerpt }`, each HTML-escaped with every matching word in `<mark>`…`</mark>` (null when the field is); without `search`, null. ' +
          'Anything else is a 400.',
        example: 'alternates,highlights',
        schema: { type: 'string', pattern: '^(alternates|highlights)(,(alternates|highlights))*$', examples: ['alternates', 'highlights', 'alternates,highlights'] },
      },
      Lang: {
        name: 'lang',
        in: 'query',
        description: "A configured language code; the site's default language when absent or unknown.",
        example: 'fr',
        schema: { type: 'string' },
      },
    },
    responses: {
      BadParameter: errorResponse(
        '`page`, `per_page` or `author` is not a positive integer in decimal digits, `after` is not a cursor of a `Link` header (of this order), `page` and `after` are both given, ' +
          '`term` is not a list of `taxonomy:slug` pairs, `search` is too long, `order` is not one it can take, `fields` names a key an item cannot have, or `include` is not a list of `alternates` and `highlights`.',
        [
          'The page parameter must be a positive integer.',
          'The per_page parameter must be a positive integer.',
          'The after parameter is not a valid cursor.',
          'The page and after parameters cannot be used together.',
          'The term parameter must be a comma-separated list of taxonomy:slug pairs.',
          'The author parameter must be a positive integer.',
          `The search parameter must be at most ${MAX_SEARCH_LENGTH} characters.`,
          'The order parameter must be relevance or date.',
          ...ITEM_SHAPE_MESSAGES,
        ],
        [...EVERY_ANSWER, 'Cache-Control'],
      ),
    },
  }
}

/** The 400s of C44, C45 and C55 (the unknown key is an example). */
const ITEM_SHAPE_MESSAGES = ['The fields parameter names an unknown field: body.', 'The include parameter must be a comma-separated list of: alternates, highlights.']

/**
 * C44: what `fields` may hold: item keys, comma-separated, with blanks and
 * empty entries (which are skipped).
 * @example new RegExp(fieldsPattern(['id', 'title'])).test('title, id') // true
 */
function fieldsPattern(itemKeys: readonly string[]): string {
  const key = `(${itemKeys.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})`
  return `^\\s*(${key}\\s*)?(,\\s*(${key}\\s*)?)*$`
}
