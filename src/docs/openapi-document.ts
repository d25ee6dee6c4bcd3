import type { TObject } from '@sinclair/typebox'
import packageJson from '../../package.json'
import { changesOpenApi } from '../changes/openapi-paths'
import { contentOpenApi } from '../content/openapi-paths'
import { ErrorBody } from '../content/schemas'
import { demoMediaOpenApi } from '../demo/media'
import { discoveryOpenApi } from '../discovery/openapi-paths'
import { webhooksOpenApi } from '../webhooks/openapi-webhooks'
import { healthOpenApi } from '../http/health'
import { EVERY_ANSWER, errorResponse, headers, ref, type Json, type OpenApiDeclaration, type OpenApiDocument, type Operation, type PathDeclaration } from '../http/openapi-declarations'
import { RESPONSE_HEADERS, type ResponseHeaderName } from '../http/response-headers'
import { apiIndexOpenApi } from './api-index'
import { apiDocumentationOpenApi } from './openapi'

export interface DocumentInputs {
  /** `PUBLIC_URL`: the document's one server. */
  publicUrl: string
  /** The item as the installed extensions declare it (FilterRegistry.itemSchema). */
  itemSchema: TObject
  /** The demo's images are served under /media (config.demoMedia). */
  demoMedia?: boolean
}

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

/** `listContent` → `ListContent`. */
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * The service's OpenAPI 3.1 document, assembled from what each family of
 * routes declares beside its routes (its paths, schemas, parameters and
 * responses: src/content/openapi-paths.ts and the like), with what they all
 * share: the info, the server, the tags, the error body, `If-None-Match`, the
 * answers every path may give, the response headers, and each path's HEAD,
 * OPTIONS and refused methods. A pure function of its inputs, built once at
 * start: the same settings and extensions give the same bytes, whatever was
 * served before.
 * @example JSON.stringify(buildOpenApiDocument({ publicUrl: 'https://cms.example.com', itemSchema: registry.itemSchema }))
 */
export function buildOpenApiDocument({ publicUrl, itemSchema, demoMedia = false }: DocumentInputs): OpenApiDocument {
  // In the order of the document's paths, which the index (GET /api/v1) lists in that order too.
  const families: OpenApiDeclaration[] = [
    contentOpenApi(itemSchema),
    changesOpenApi(itemSchema),
    discoveryOpenApi(),
    apiIndexOpenApi(),
    apiDocumentationOpenApi(),
    ...(demoMedia ? [demoMediaOpenApi()] : []),
    healthOpenApi(),
    webhooksOpenApi(),
  ]
  const schemas = Object.assign({}, ...families.map((family) => family.schemas ?? {}), { Error: ErrorBody }) as Record<string, unknown>
  const names = new Map<object, string>(Object.entries(schemas).map(([name, schema]) => [schema as object, name]))
  const responses: Record<string, Json> = Object.assign(sharedResponses(), ...families.map((family) => family.responses ?? {}))
  const paths = Object.fromEntries(families.flatMap((family) => Object.entries(family.paths).map(([path, declared]) => [openApiPath(path), pathItem(declared, responses)])))

  return forReaders({
    openapi: '3.1.0',
    info: {
      title: 'Vitrine content API',
      // The API's version; package.json follows it, and the index (GET /api/v1) says the same.
      version: packageJson.version,
      description: [
        'A read-only, public JSON API serving published content entries.',
        '',
        'Try first: `GET /api/v1/content/post` (the latest posts, 20 a page; the `Link` header continues the walk),',
        '`GET /api/v1/content/post/{slug}` (one entry), `?lang=fr` (another language), `GET /api/v1` (every route).',
        'A typed client in one command: `bunx openapi-typescript <this document\'s URL> -o api.d.ts`. The project\'s',
        '`docs/frontend.md` is the quick start: walking a type, the article\'s body, rebuilding a site on change.',
        '',
        'Items have exactly the fields of `ContentItem` in this document (with `fields`, only those named:',
        '`ContentItemFields`). Extensions installed on this service',
        'may add fields or remove them through the filter hook `service/api/content-item`; each declares what it',
        'changes, and this document is built from those declarations when the service starts.',
        '',
        'Every path answers `HEAD` (the same status and headers as `GET`, no body) and `OPTIONS` (CORS',
        'preflight): each is an operation of this document, as is the 405 of `POST`, `PUT`, `PATCH` and `DELETE` on an',
        'API path; the reference page (/docs) shows each path\'s `GET` only. Responses vary by `lang` and by every request header',
        'an extension reads: see `Vary`. `GET /api/v1` lists every path with its URL.',
      ].join('\n'),
    },
    servers: [{ url: new URL(publicUrl).origin, description: 'This installation (PUBLIC_URL)' }],
    security: [],
    // In a reader's order, which the reference page (/docs) follows: what the API serves, what the site is
    // made of, how to follow it, then this document and the probes.
    tags: [
      { name: 'content', description: 'Published content entries' },
      { name: 'discovery', description: "What the site is made of: languages, content types, taxonomies and terms, with live totals; the API's index" },
      { name: 'sync', description: 'Sync and events: following changes, a copy of a type kept up to date (C48) and a live stream of what changed (C49)' },
      { name: 'documentation', description: 'This document, its reference page, and the way there' },
      { name: 'operations', description: 'Probes for orchestrators and load balancers' },
      { name: 'webhooks', description: 'What the service sends to the endpoints of the `webhooks` table (C57): a message per change, or one per quiet window for build hooks; Standard Webhooks headers and signatures' },
    ],
    paths,
    webhooks: Object.assign({}, ...families.map((family) => family.webhooks ?? {})),
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, referencing(schema, names, schema)])),
      parameters: {
        ...Object.assign({}, ...families.map((family) => family.parameters ?? {})),
        IfNoneMatch: {
          name: 'If-None-Match',
          in: 'header',
          description: 'ETags of answers you hold (a comma-separated list, weak ones too), or `*`: a match is a 304 without a body (C32).',
          schema: { type: 'string', examples: ['"RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o"'] },
        },
      },
      responses,
      headers: RESPONSE_HEADERS,
    },
  })
}

/**
 * The document as its readers see it (the reference page, a generated client's comments): the rule
 * numbers our code and tests go by (`(C48)`) are ours, not theirs, and are taken out of every
 * description and summary.
 * @example forReaders({ description: 'RFC 3339 in UTC (C13).' }) // { description: 'RFC 3339 in UTC.' }
 */
export function forReaders<Value>(value: Value): Value {
  if (Array.isArray(value)) return value.map(forReaders) as Value
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value).map(([key, each]) => [key, (key === 'description' || key === 'summary') && typeof each === 'string' ? withoutRuleNumbers(each) : forReaders(each)]),
  ) as Value
}

function withoutRuleNumbers(text: string): string {
  return text
    .replace(/ ?\((?:C\d+(?:[,–-] ?C?\d+)*)\)/g, '')
    .replace(/, C\d+(?:, C\d+)*\)/g, ')')
    .replace(/\(C\d+\) /g, '')
}

/**
 * A path as the document writes it: its GET; HEAD as its GET, without a body
 * (C3), and OPTIONS as a CORS preflight (C29), both operations of their own so
 * that a validating proxy (Stoplight Prism) lets them through; and, on an API
 * path, the methods it refuses (C3). The path's own parameters (`{type}`) open
 * the parameters of each operation rather than sit beside them: Swagger UI
 * (5.35) fills in the example of an operation's parameter only, and the
 * reference page's "Try it out" would otherwise send `{type}` as it is.
 */
function pathItem({ parameters = [], get, refusedAs }: PathDeclaration, responses: Record<string, Json>): Json {
  const withPathParameters = (operation: Json) => {
    const all = [...parameters, ...((operation.parameters as unknown[] | undefined) ?? [])]
    return { ...operation, ...(all.length ? { parameters: all } : {}) }
  }
  const operations: Record<string, Json> = {
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
    ...(refusedAs === undefined ? {} : refusals(refusedAs, get)),
  }
  return Object.fromEntries(Object.entries(operations).map(([method, operation]) => [method, withPathParameters(operation)]))
}

/** C3: POST, PUT, PATCH and DELETE of an API path, each a 405, under the tag of its GET. */
function refusals(resource: string, get: Operation): Json {
  return Object.fromEntries(
    REFUSED_METHODS.map((method) => [
      method,
      {
        operationId: `${method}${resource}`,
        tags: [get.tags[0]],
        summary: `${method.toUpperCase()} is not allowed: the API is read-only`,
        responses: { '405': ref('responses', 'MethodNotAllowed') },
      },
    ]),
  )
}

/** The answers the paths of every family may give, by name (`#/components/responses/…`). */
function sharedResponses(): Record<string, Json> {
  return {
    NotModified: {
      description: 'The answer has not changed since the one whose ETag you sent: use yours (C32).',
      headers: headers(...EVERY_ANSWER, 'ETag', 'Cache-Control', 'Surrogate-Key', 'X-Cache', 'Age'),
    },
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
