import { Type, type TObject } from '@sinclair/typebox'
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, MAX_SEARCH_LENGTH, MAX_TERM_PAIRS } from '../content/parameters'
import { LIST_PATH, SHOW_PATH } from '../content/routes'
import { DEFAULT_SYNC_PER_PAGE, MAX_SYNC_PER_PAGE } from '../changes/sync-answer'
import { SYNC_PATH } from '../changes/routes'
import { EVENTS_PATH } from '../changes/event-routes'
import { INVALID_EVENT_ID } from '../changes/event-mark'
import { MAX_IDS_PER_EVENT } from '../changes/event-statement'
import { EXPIRED_TOKEN, INVALID_TOKEN } from '../changes/sync-token'
import { Alternate, Author, ErrorBody, FeaturedImage, ListMeta, Term, itemSelection, listBody, showBody, syncBody } from '../content/schemas'
import { CONTENT_TYPES_PATH, LANGUAGES_PATH, TAXONOMIES_PATH, TERMS_PATH } from '../discovery/routes'
import { ContentTypeList, ContentTypeSummary, Language, LanguageList, Taxonomy, TaxonomyList, TermList, TermSummary } from '../discovery/schemas'
import { RESPONSE_HEADERS, type ResponseHeaderName } from '../http/response-headers'
import { ApiIndex, DOCS_PATH, INDEX_PATH } from './api-index'
import { DOCS_ASSETS, OPENAPI_PATH } from './openapi'

export interface DocumentInputs {
  /** `PUBLIC_URL`: the document's one server. */
  publicUrl: string
  /** The item as the installed extensions declare it (FilterRegistry.itemSchema). */
  itemSchema: TObject
  /** The demo's images are served under /media (config.demoMedia). */
  demoMedia?: boolean
}

type Json = Record<string, unknown>

/** The document as its readers below use it: paths, then methods, then operations. */
export type OpenApiDocument = Json & { paths: Record<string, Json> }

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

/** What a CORS preflight answer carries (C29). */
const PREFLIGHT_ANSWER: ResponseHeaderName[] = [
  'X-Request-Id',
  'Vary',
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Methods',
  'Access-Control-Max-Age',
  'Access-Control-Allow-Headers',
]

type Operation = { operationId: string; tags: string[]; summary: string; parameters?: unknown[]; responses: Record<string, Json> } & Json

/** A path parameter, which a path cannot hold empty (`/api/v1/content//x` is another path). */
const pathParameter = (name: string, description: string, extra: Json = {}) => ({ name, in: 'path', required: true, description, schema: { type: 'string', minLength: 1, ...extra } })

/** `listContent` → `ListContent`. */
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * The service's OpenAPI 3.1 document: the content item as the installed
 * extensions declare it, named component schemas, every status and header a
 * route answers. A pure function of its inputs, built once at start: the same
 * settings and extensions give the same bytes, whatever was served before.
 * @example JSON.stringify(buildOpenApiDocument({ publicUrl: 'https://cms.example.com', itemSchema: registry.itemSchema }))
 */
export function buildOpenApiDocument({ publicUrl, itemSchema, demoMedia = false }: DocumentInputs): OpenApiDocument {
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
    Language,
    LanguageList,
    ContentTypeSummary,
    ContentTypeList,
    Taxonomy,
    TaxonomyList,
    TermSummary,
    TermList,
    ApiIndex,
    Error: ErrorBody,
    Status: Type.Object({ status: Type.String() }, { additionalProperties: false }),
    Readiness: Type.Object(
      {
        status: Type.Literal('ready'),
        replicas: Type.Optional(
          Type.Array(
            Type.Object(
              {
                name: Type.String({ description: 'host:port/database of a URL of DATABASE_READ_URLS.', examples: ['replica-1:5432/cms'] }),
                serving: Type.Boolean({ description: 'In the rotation: content reads may go to it (C50).' }),
                reason: Type.Optional(Type.String({ description: 'Why it does not serve: it failed, lags more than REPLICA_MAX_LAG_MS, or is not a standby.' })),
              },
              { additionalProperties: false },
            ),
            { description: 'Only with DATABASE_READ_URLS: each replica and whether it serves (C50).' },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  }
  const names = new Map<object, string>(Object.entries(schemas).map(([name, schema]) => [schema, name]))
  const contentHeaders = headers(...CONTENT_ANSWER)
  const refusals = (resource: string, tag = 'content') =>
    Object.fromEntries(
      REFUSED_METHODS.map((method) => [
        method,
        {
          operationId: `${method}${resource}`,
          tags: [tag],
          summary: `${method.toUpperCase()} is not allowed: the API is read-only`,
          responses: { '405': ref('responses', 'MethodNotAllowed') },
        },
      ]),
    )
  const responses = componentResponses()
  /**
   * Every path answers HEAD as its GET, without a body (C3), and OPTIONS as a
   * CORS preflight (C29): both are operations of their own, so that a
   * validating proxy (Stoplight Prism) lets them through.
   */
  const answered = (get: Operation): Json => ({
    get,
    head: {
      operationId: `head${capitalized(get.operationId)}`,
      tags: get.tags,
      summary: `The headers of: ${get.summary.charAt(0).toLowerCase()}${get.summary.slice(1)}`,
      ...(get.parameters ? { parameters: get.parameters } : {}),
      responses: Object.fromEntries(Object.entries(get.responses).map(([status, response]) => [status, withoutBody(response, responses)])),
    },
    options: {
      operationId: `preflight${capitalized(get.operationId)}`,
      tags: get.tags,
      summary: 'CORS preflight',
      responses: { '204': { description: 'What a browser may send here (C29); no body.', headers: headers(...PREFLIGHT_ANSWER) } },
    },
  })
  const answerOf = (description: string, schema: string) => ({ description, headers: contentHeaders, ...json(ref('schemas', schema)) })
  const discoveryList = (operationId: string, summary: string, description: string, schema: string): Operation => ({
    operationId,
    tags: ['discovery'],
    summary,
    description,
    parameters: [ref('parameters', 'IfNoneMatch')],
    responses: {
      '200': answerOf('The list, whole.', schema),
      '304': ref('responses', 'NotModified'),
      '500': ref('responses', 'InternalError'),
      '503': ref('responses', 'ServiceUnavailable'),
    },
  })

  return {
    openapi: '3.1.0',
    info: {
      title: 'Vitrine content API',
      version: '1.5.0',
      description: [
        'A read-only, public JSON API serving published content entries.',
        '',
        'Items have exactly the fields of `ContentItem` in this document (with `fields`, only those named:',
        '`ContentItemFields`). Extensions installed on this service',
        'may add fields or remove them through the filter hook `service/api/content-item`; each declares what it',
        'changes, and this document is built from those declarations when the service starts.',
        '',
        'Every path answers `HEAD` (the same status and headers as `GET`, no body) and `OPTIONS` (CORS',
        'preflight): each is an operation of this document. Responses vary by `lang` and by every request header',
        'an extension reads: see `Vary`. `GET /api/v1` lists every path with its URL.',
      ].join('\n'),
    },
    servers: [{ url: new URL(publicUrl).origin, description: 'This installation (PUBLIC_URL)' }],
    security: [],
    tags: [
      { name: 'content', description: 'Published content entries' },
      { name: 'sync', description: 'Following changes: a copy of a type kept up to date (C48)' },
      { name: 'discovery', description: "What the site is made of: languages, content types, taxonomies and terms, with live totals; the API's index" },
      { name: 'documentation', description: 'This document, its reference page, and the way there' },
      { name: 'operations', description: 'Probes for orchestrators and load balancers' },
    ],
    paths: {
      [openApiPath(LIST_PATH)]: {
        parameters: [ref('parameters', 'ContentType')],
        ...answered({
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
        }),
        ...refusals('ContentList'),
      },
      [openApiPath(SHOW_PATH)]: {
        parameters: [ref('parameters', 'ContentType'), ref('parameters', 'Slug')],
        ...answered({
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
        }),
        ...refusals('Content'),
      },
      [openApiPath(SYNC_PATH)]: {
        parameters: [ref('parameters', 'ContentType')],
        ...answered({
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
        }),
        ...refusals('Sync', 'sync'),
      },
      [EVENTS_PATH]: {
        ...answered({
          operationId: 'streamEvents',
          tags: ['sync'],
          summary: 'A live stream of what changed (Server-Sent Events)',
          description: [
            'A `text/event-stream` that stays open (C49). After each commit that may change items, and at the second an embargoed entry',
            'goes live, one `event: change` per type, `data: {"type": "post", "ids": [1, 2]}`: the entries whose items may have changed or',
            `stopped being live (\`"ids": null\`: anything of the type, as after a custom field or a language changed, or past ${MAX_IDS_PER_EVENT}`,
            'entries). Each event has an `id:`; a client that reconnects with it in `Last-Event-ID` (EventSource does) gets what it missed',
            'from the change log first, or `event: reset` (`data: {}`) when that is older than the retention: sync again. The stream opens',
            'with an `id:` line alone, and a comment line (`:`) comes every 15 s. Streams per process are bounded (`EVENTS_MAX_SUBSCRIBERS`);',
            'a client that does not read is dropped. A graceful stop ends every stream: reconnect.',
          ].join('\n'),
          parameters: [ref('parameters', 'EventTypes'), ref('parameters', 'LastEventId')],
          responses: {
            '200': {
              description: 'The stream: `Cache-Control: no-store`.',
              headers: headers(...EVERY_ANSWER, 'Cache-Control'),
              content: {
                'text/event-stream': {
                  schema: { type: 'string' },
                  example: 'id: 41.1795551032630679\n\nevent: change\nid: 42.1795551032642072\ndata: {"type":"post","ids":[7]}\n\n:\n\n',
                },
              },
            },
            '400': errorResponse('`Last-Event-ID` is not an id this stream sent.', [INVALID_EVENT_ID], EVERY_ANSWER),
            '404': errorResponse('`types` names a content type that does not exist.', ['Content type not found.'], EVERY_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        }),
        ...refusals('Events', 'sync'),
      },
      [LANGUAGES_PATH]: {
        ...answered(discoveryList('listLanguages', 'List the languages', "Every configured language, ordered by code; `is_default` marks the site's default (C46).", 'LanguageList')),
        ...refusals('Languages', 'discovery'),
      },
      [CONTENT_TYPES_PATH]: {
        ...answered(
          discoveryList(
            'listContentTypes',
            'List the content types with their live totals',
            'Every content type, ordered by slug, with the number of its live entries: `meta.total` of its list (C18, C46).',
            'ContentTypeList',
          ),
        ),
        ...refusals('ContentTypes', 'discovery'),
      },
      [TAXONOMIES_PATH]: {
        ...answered(discoveryList('listTaxonomies', 'List the taxonomies', 'Every taxonomy (`category`, `tag`, …), ordered by slug (C46).', 'TaxonomyList')),
        ...refusals('Taxonomies', 'discovery'),
      },
      [openApiPath(TERMS_PATH)]: {
        parameters: [ref('parameters', 'Taxonomy')],
        ...answered({
          operationId: 'listTerms',
          tags: ['discovery'],
          summary: "List a taxonomy's terms with their live totals",
          description:
            'The terms that at least one live entry carries (of `type`, when given), ordered by name then id, each with the number of those entries: ' +
            '`meta.total` of the list filtered by `term={taxonomy}:{slug}` (summed over the types without `type`). A term that only drafts, scheduled or ' +
            'embargoed entries carry is absent, and appears at the second its first entry goes live (C46). `meta.total` counts the terms.',
          parameters: [ref('parameters', 'TermType'), ref('parameters', 'Page'), ref('parameters', 'PerPage'), ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': answerOf('A page of terms; past the last page, `data` is empty.', 'TermList'),
            '304': ref('responses', 'NotModified'),
            '400': ref('responses', 'BadPagination'),
            '404': errorResponse('`type` names no content type (checked first), or the taxonomy does not exist.', ['Content type not found.', 'Taxonomy not found.'], CONTENT_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        }),
        ...refusals('Terms', 'discovery'),
      },
      [INDEX_PATH]: {
        ...answered({
          operationId: 'getApiIndex',
          tags: ['discovery'],
          summary: "The API's index",
          description: "The service's name and version, and the URL of every path of this document, of this document and of /docs (C46).",
          parameters: [ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': { description: 'The index.', headers: contentHeaders, ...json(ref('schemas', 'ApiIndex')) },
            '304': ref('responses', 'NotModified'),
            '500': ref('responses', 'InternalError'),
          },
        }),
        ...refusals('ApiIndex', 'discovery'),
      },
      '/': answered({
        operationId: 'redirectToDocs',
        tags: ['documentation'],
        summary: 'Redirect to the reference at /docs',
        responses: {
          '302': {
            description: 'The reference is at `Location` (C46).',
            headers: headers(...EVERY_ANSWER, 'Location'),
            ...json(Type.Object({ docs: Type.Literal(DOCS_PATH) }, { additionalProperties: false })),
          },
        },
      }),
      [OPENAPI_PATH]: answered({
        operationId: 'getOpenApiDocument',
        tags: ['documentation'],
        summary: 'This document',
        responses: { '200': { description: 'The OpenAPI 3.1 document, the same bytes on every request of an instance.', headers: headers(...EVERY_ANSWER), ...json({ type: 'object' }) } },
      }),
      [DOCS_PATH]: answered({
        operationId: 'getDocs',
        tags: ['documentation'],
        summary: 'The interactive reference (Swagger UI) of this document',
        responses: { '200': { description: 'An HTML page; its scripts and styles come from /docs/assets, never from another host.', headers: headers(...EVERY_ANSWER), content: { 'text/html': { schema: { type: 'string' } } } } },
      }),
      [`${DOCS_PATH}/assets/{file}`]: {
        parameters: [pathParameter('file', 'One of the files of the reference page.', { enum: Object.keys(DOCS_ASSETS) })],
        ...answered({
          operationId: 'getDocsAsset',
          tags: ['documentation'],
          summary: "A script or style sheet of the reference page",
          responses: {
            '200': {
              description: 'The file.',
              headers: headers(...EVERY_ANSWER),
              content: Object.fromEntries([...new Set(Object.values(DOCS_ASSETS))].map((type: string) => [type.split(';')[0], { schema: { type: 'string' } }])),
            },
            '404': errorResponse('No such file.', ['Not found.'], EVERY_ANSWER),
          },
        }),
      },
      ...(demoMedia ? { '/media/uploads/{year}/{file}': demoMediaPath(answered) } : {}),
      '/healthz': answered({
        operationId: 'checkLiveness',
        tags: ['operations'],
        summary: 'Liveness: the process answers',
        responses: { '200': { description: 'The process runs.', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Status'), { example: { status: 'ok' } }) } },
      }),
      '/readyz': answered({
        operationId: 'checkReadiness',
        tags: ['operations'],
        summary: 'Readiness: the database answers and is migrated',
        responses: {
          '200': { description: 'Ready to serve (replicas out of the rotation or not, C50).', headers: headers(...EVERY_ANSWER), ...json(ref('schemas', 'Readiness'), { example: { status: 'ready' } }) },
          '503': errorResponse('The database cannot be reached, or has pending migrations.', ['The database is not reachable.'], [...EVERY_ANSWER, 'Retry-After']),
        },
      }),
    },
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, referencing(schema, names, schema)])),
      parameters: {
        ContentType: pathParameter('type', 'A content type slug: `page`, `post`, or a custom type. Case-sensitive.'),
        Slug: pathParameter('slug', "The entry's slug in the selected language (or its default-language slug when it has no translation in it)."),
        Taxonomy: pathParameter('taxonomy', 'A taxonomy slug (`category`, `tag`, …), as `GET /api/v1/taxonomies` lists them. Case-sensitive.'),
        TermType: {
          name: 'type',
          in: 'query',
          description: 'Only the live entries of this content type (case-sensitive, as `{type}`); without it, of every type.',
          schema: { type: 'string', examples: ['post'] },
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
        EventTypes: {
          name: 'types',
          in: 'query',
          description: 'Content type slugs, comma-separated: only their events. Absent or empty: every type. Each must exist (404).',
          schema: { type: 'string', examples: ['post,page'] },
        },
        LastEventId: {
          name: 'Last-Event-ID',
          in: 'header',
          description: 'The `id` of the last event received: the stream starts with what changed since (EventSource sends it when it reconnects).',
          schema: { type: 'string', pattern: '^\\d{1,18}\\.\\d{1,18}(\\.\\d{1,20}(-\\d{1,20})*)?$', examples: ['42.1795551032642072'] },
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
      responses,
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

/** The answers many operations share, by name (`#/components/responses/…`). */
function componentResponses(): Record<string, Json> {
  return {
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
    BadPagination: errorResponse(
      '`page` or `per_page` is not a positive integer in decimal digits.',
      ['The page parameter must be a positive integer.', 'The per_page parameter must be a positive integer.'],
      [...EVERY_ANSWER, 'Cache-Control'],
    ),
    MethodNotAllowed: errorResponse('Any method but GET, HEAD and OPTIONS; `Allow` lists them.', ['Method not allowed.'], [...EVERY_ANSWER, 'Allow', 'Cache-Control']),
    InternalError: errorResponse('An unexpected failure, or a failing extension.', ['Internal server error.'], [...EVERY_ANSWER, 'Cache-Control']),
    ServiceUnavailable: errorResponse('The database cannot be reached, or (C47) the share of it for statements that cost more as the site grows (pages deep by number, searches, several filters) is full; ask again after `Retry-After` seconds.', ['Service unavailable.'], [...EVERY_ANSWER, 'Retry-After', 'Cache-Control']),
  
  }
}

/**
 * A response of a HEAD operation: the GET's description and headers, no body
 * (C3). A shared response is written out, since its own has a body.
 */
function withoutBody(response: Json, responses: Record<string, Json>): Json {
  const reference = response.$ref
  const resolved = typeof reference === 'string' ? responses[reference.slice('#/components/responses/'.length)]! : response
  return { description: resolved.description, ...(resolved.headers ? { headers: resolved.headers } : {}) }
}

/** `/media/uploads/{year}/{file}`: the demo's images (src/demo/media.ts), only where they are served. */
function demoMediaPath(answered: (get: Operation) => Json): Json {
  return {
    parameters: [
      pathParameter('year', 'A folder of the demo uploads.', { examples: ['2026'] }),
      pathParameter('file', 'An image file, as an item\'s `featured_image` names it.', { examples: ['photo-12.jpg', 'photo-12-thumbnail.jpg'] }),
    ],
    ...answered({
      operationId: 'getDemoImage',
      tags: ['documentation'],
      summary: "An image of the demo content (the embedded database's only)",
      responses: {
        '200': { description: 'The image.', headers: headers(...EVERY_ANSWER), content: { 'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } } } },
        '404': errorResponse('No such image.', ['Not found.'], EVERY_ANSWER),
      },
    }),
  }
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
