import { Type, type TObject } from '@sinclair/typebox'
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, MAX_SEARCH_LENGTH, MAX_TERM_PAIRS } from '../content/parameters'
import { LIST_PATH, SHOW_PATH } from '../content/routes'
import { DEFAULT_SYNC_PER_PAGE, MAX_SYNC_PER_PAGE } from '../changes/sync-answer'
import { SYNC_PATH } from '../changes/routes'
import { EXPIRED_TOKEN, INVALID_TOKEN } from '../changes/sync-token'
import { Alternate, Author, ErrorBody, FeaturedImage, ListMeta, Term, itemSelection, listBody, showBody, syncBody } from '../content/schemas'
import { RESPONSE_HEADERS, type ResponseHeaderName } from '../http/response-headers'

export interface DocumentInputs {
  /** `PUBLIC_URL`: the document's one server. */
  publicUrl: string
  /** The item as the installed extensions declare it (FilterRegistry.itemSchema). */
  itemSchema: TObject
}

type Json = Record<string, unknown>

const ref = (kind: 'schemas' | 'parameters' | 'responses' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` })
const json = (schema: unknown, extra: Json = {}) => ({ content: { 'application/json': { schema, ...extra } } })

/** Headers by kind of answer (C29, C22, C3, C32–C34); `Vary` may carry `Origin` on any answer. */
const EVERY_ANSWER: ResponseHeaderName[] = ['X-Request-Id', 'Vary']
const CONTENT_ANSWER: ResponseHeaderName[] = [...EVERY_ANSWER, 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age']
const headers = (...names: ResponseHeaderName[]) => Object.fromEntries(names.map((name) => [name, ref('headers', name)]))

const errorResponse = (description: string, messages: string[], headerNames: ResponseHeaderName[]) => ({
  description,
  headers: headers(...headerNames),
  ...json(ref('schemas', 'Error'), { examples: Object.fromEntries(messages.map((error, index) => [`error${index + 1}`, { value: { error } }])) }),
})

/** The methods an API path refuses (C3); TRACE and the rest do too, and are left out of the document. */
const REFUSED_METHODS = ['post', 'put', 'patch', 'delete'] as const

/**
 * The service's OpenAPI 3.1 document: the content item as the installed
 * extensions declare it, named component schemas, every status and header a
 * route answers. A pure function of its inputs, built once at start: the same
 * settings and extensions give the same bytes, whatever was served before.
 * @example JSON.stringify(buildOpenApiDocument({ publicUrl: 'https://cms.example.com', itemSchema: registry.itemSchema }))
 */
export function buildOpenApiDocument({ publicUrl, itemSchema }: DocumentInputs): Json {
  const selection = itemSelection(itemSchema)
  // C44: an answer's items are whole, or hold the keys `fields` named.
  const anyItem = Type.Union([itemSchema, selection])
  const itemKeys = Object.keys(itemSchema.properties)
  const schemas = {
    ContentItem: itemSchema,
    ContentItemFields: selection,
    Author,
    FeaturedImage,
    Term,
    Alternate,
    ListMeta,
    ContentList: listBody(anyItem),
    ContentEntry: showBody(anyItem),
    SyncPage: syncBody(itemSchema),
    Error: ErrorBody,
    Status: Type.Object({ status: Type.String() }, { additionalProperties: false }),
  }
  const names = new Map<object, string>(Object.entries(schemas).map(([name, schema]) => [schema, name]))
  const contentHeaders = headers(...CONTENT_ANSWER)
  const refusals = (resource: string) =>
    Object.fromEntries(
      REFUSED_METHODS.map((method) => [
        method,
        {
          operationId: `${method}${resource}`,
          tags: ['content'],
          summary: `${method.toUpperCase()} is not allowed: the API is read-only`,
          responses: { '405': ref('responses', 'MethodNotAllowed') },
        },
      ]),
    )

  return {
    openapi: '3.1.0',
    info: {
      title: 'Vitrine content API',
      version: '1.4.0',
      description: [
        'A read-only, public JSON API serving published content entries.',
        '',
        'Items have exactly the fields of `ContentItem` in this document (with `fields`, only those named:',
        '`ContentItemFields`). Extensions installed on this service',
        'may add fields or remove them through the filter hook `service/api/content-item`; each declares what it',
        'changes, and this document is built from those declarations when the service starts.',
        '',
        'Every path also answers `HEAD` (the same status and headers as `GET`, no body) and `OPTIONS` (CORS',
        'preflight). Responses vary by `lang` and by every request header an extension reads: see `Vary`.',
      ].join('\n'),
    },
    servers: [{ url: new URL(publicUrl).origin, description: 'This installation (PUBLIC_URL)' }],
    security: [],
    tags: [
      { name: 'content', description: 'Published content entries' },
      { name: 'sync', description: 'Following changes: a copy of a type kept up to date (C48)' },
      { name: 'operations', description: 'Probes for orchestrators and load balancers' },
    ],
    paths: {
      [openApiPath(LIST_PATH)]: {
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
        ...refusals('ContentList'),
      },
      [openApiPath(SHOW_PATH)]: {
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
            '400': errorResponse('`fields` names a key an item cannot have, or `include` is not `alternates`.', ITEM_SHAPE_MESSAGES, [...EVERY_ANSWER, 'Cache-Control']),
            '404': errorResponse('The content type does not exist (checked first), or no live entry of it has this slug.', ['Content type not found.', 'Not found.'], CONTENT_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        ...refusals('Content'),
      },
      [openApiPath(SYNC_PATH)]: {
        parameters: [ref('parameters', 'ContentType')],
        get: {
          operationId: 'syncContent',
          tags: ['sync'],
          summary: 'Sync a content type: every live entry, then what changed',
          description: [
            'Without `token`: every live entry of the type, by id, in pages. The last page gives `meta.next_sync_url`; ask it later for',
            'the entries whose item may have changed since (`data`, by their latest state: their own rows, translations, terms, author,',
            'image, field values, a shared row they show renamed, or their publication time come) and the ids of those that stopped',
            'being live or were removed (`deleted`). Exactly one of `next_page_url` and `next_sync_url` is set. Applying a first sync',
            'and its deltas to a copy gives exactly the live entries a fresh sync gives. Items are the lists\' (the filter hook applied).',
            'Tokens are opaque, survive restarts and work on every instance. A delta costs about the number of changes.',
          ].join('\n'),
          parameters: [ref('parameters', 'SyncPerPage'), ref('parameters', 'Lang'), ref('parameters', 'SyncToken'), ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': { description: 'A page of the sync.', headers: contentHeaders, ...json(ref('schemas', 'SyncPage')) },
            '304': ref('responses', 'NotModified'),
            '400': errorResponse('A bad `per_page`, or a token this service did not make, or made for another type or language.', ['The per_page parameter must be a positive integer.', INVALID_TOKEN], [...EVERY_ANSWER, 'Cache-Control']),
            '404': errorResponse('The content type does not exist.', ['Content type not found.'], EVERY_ANSWER),
            '410': errorResponse('The token is older than the retention (`SYNC_RETENTION_DAYS`), or the change log it needs was pruned or declared incomplete: start a new sync.', [EXPIRED_TOKEN], EVERY_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        ...refusals('Sync'),
      },
      '/healthz': {
        get: {
          operationId: 'checkLiveness',
          tags: ['operations'],
          summary: 'Liveness: the process answers',
          responses: { '200': { description: 'The process runs.', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Status'), { example: { status: 'ok' } }) } },
        },
      },
      '/readyz': {
        get: {
          operationId: 'checkReadiness',
          tags: ['operations'],
          summary: 'Readiness: the database answers and is migrated',
          responses: {
            '200': { description: 'Ready to serve.', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Status'), { example: { status: 'ready' } }) },
            '503': errorResponse('The database cannot be reached, or has pending migrations.', ['The database is not reachable.'], [...EVERY_ANSWER, 'Retry-After']),
          },
        },
      },
    },
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, referencing(schema, names, schema)])),
      parameters: {
        ContentType: { name: 'type', in: 'path', required: true, description: 'A content type slug: `page`, `post`, or a custom type. Case-sensitive.', schema: { type: 'string' } },
        Slug: {
          name: 'slug',
          in: 'path',
          required: true,
          description: "The entry's slug in the selected language (or its default-language slug when it has no translation in it).",
          schema: { type: 'string' },
        },
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
          schema: { type: 'string', pattern: '^[^,:]+:[^,]+(,[^,:]+:[^,]+)*$', examples: ['category:news', 'category:news,tag:bun'] },
        },
        Author: {
          name: 'author',
          in: 'query',
          description: "Only entries by this author (`author.id`), in decimal digits (C41). An author with no live entries gives an empty list.",
          schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, examples: [3] },
        },
        Search: {
          name: 'search',
          in: 'query',
          description:
            `Full-text search (C42) in the title, excerpt and body of the translation each entry shows, with that language's stemming (PostgreSQL's \`websearch_to_tsquery\`: words, "quoted phrases", \`or\`, \`-word\`). ` +
            `At most ${MAX_SEARCH_LENGTH} characters; blank is as if absent. Results come by relevance (a match in the title counts most, then the excerpt, then the body) unless \`order=date\`.`,
          schema: { type: 'string', maxLength: MAX_SEARCH_LENGTH, examples: ['coffee', '"cache invalidation" -redis'] },
        },
        Order: {
          name: 'order',
          in: 'query',
          description: '`relevance` (the default with `search`, and only with it) or `date` (list order: newest first). Cursors walk either.',
          schema: { type: 'string', enum: ['relevance', 'date'] },
        },
        SyncPerPage: {
          name: 'per_page',
          in: 'query',
          description: `Entries per page of a sync (live and deleted together), in decimal digits. A value above ${MAX_SYNC_PER_PAGE} is clamped to ${MAX_SYNC_PER_PAGE}; anything else is a 400.`,
          schema: { type: 'integer', minimum: 1, default: DEFAULT_SYNC_PER_PAGE },
        },
        SyncToken: {
          name: 'token',
          in: 'query',
          description: 'An opaque sync token, from `meta.next_page_url` or `meta.next_sync_url` of an earlier page. Absent: a new sync.',
          schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
        },
        IfNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          description: 'ETags of answers you hold (a comma-separated list, weak ones too), or `*`: a match is a 304 without a body (C32).',
          schema: { type: 'string', examples: ['"RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o"'] },
        },
        Fields: {
          name: 'fields',
          in: 'query',
          description:
            'Comma-separated item keys (C44): each item then holds only those, in their usual order, after the extensions ran. ' +
            `The keys: ${itemKeys.map((key) => `\`${key}\``).join(', ')} (the default ones, \`alternates\`, and those the installed extensions declare they add). ` +
            'Naming `alternates` includes them (as `include=alternates`). Blanks and empty entries are skipped; none at all is as if absent. Any other key is a 400.',
          schema: { type: 'string', pattern: fieldsPattern(itemKeys), examples: ['id,slug,title', 'title,slug,alternates'] },
        },
        Include: {
          name: 'include',
          in: 'query',
          description:
            "`alternates` (C45): each item gains `alternates` after `terms`, the entry's slug in every language it has one in (the selected one included), by language code: " +
            'what a language switcher and `hreflang` links need. Anything else is a 400.',
          schema: { type: 'string', enum: ['alternates'] },
        },
        Lang: {
          name: 'lang',
          in: 'query',
          description: "A configured language code; the site's default language when absent or unknown.",
          schema: { type: 'string', examples: ['fr'] },
        },
      },
      responses: {
        NotModified: {
          description: 'The answer has not changed since the one whose ETag you sent: use yours (C32).',
          headers: headers(...EVERY_ANSWER, 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age'),
        },
        BadParameter: errorResponse(
          '`page`, `per_page` or `author` is not a positive integer in decimal digits, `after` is not a cursor of a `Link` header (of this order), `page` and `after` are both given, ' +
            '`term` is not a list of `taxonomy:slug` pairs, `search` is too long, `order` is not one it can take, `fields` names a key an item cannot have, or `include` is not `alternates`.',
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
        MethodNotAllowed: errorResponse('Any method but GET, HEAD and OPTIONS; `Allow` lists them.', ['Method not allowed.'], [...EVERY_ANSWER, 'Allow', 'Cache-Control']),
        InternalError: errorResponse('An unexpected failure, or a failing extension.', ['Internal server error.'], [...EVERY_ANSWER, 'Cache-Control']),
        ServiceUnavailable: errorResponse('The database cannot be reached, or (C47) the share of it for statements that cost more as the site grows (pages deep by number, searches, several filters) is full; ask again after `Retry-After` seconds.', ['Service unavailable.'], [...EVERY_ANSWER, 'Retry-After', 'Cache-Control']),
      },
      headers: RESPONSE_HEADERS,
    },
  }
}

/** The 400s of C44 and C45 (the unknown key is an example). */
const ITEM_SHAPE_MESSAGES = ['The fields parameter names an unknown field: body.', 'The include parameter must be alternates.']

/**
 * C44: what `fields` may hold: item keys, comma-separated, with blanks and
 * empty entries (which are skipped).
 * @example new RegExp(fieldsPattern(['id', 'title'])).test('title, id') // true
 */
function fieldsPattern(itemKeys: readonly string[]): string {
  const key = `(${itemKeys.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})`
  return `^\\s*(${key}\\s*)?(,\\s*(${key}\\s*)?)*$`
}

/** `/api/v1/content/:type` as OpenAPI writes it: `/api/v1/content/{type}`. */
function openApiPath(elysiaPath: string): string {
  return elysiaPath.replace(/:(\w+)/g, '{$1}')
}

/**
 * A TypeBox schema as plain JSON (TypeBox's own symbol keys left out), with
 * each named schema inside it, other than `root`, replaced by a `$ref`.
 */
function referencing(schema: unknown, names: Map<object, string>, root?: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((entry) => referencing(entry, names))
  if (schema === null || typeof schema !== 'object') return schema
  const name = names.get(schema)
  if (name !== undefined && schema !== root) return ref('schemas', name)
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, referencing(value, names)]))
}
