import { Type, type Static } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import packageJson from '../../package.json'
import { renderedOutput, type AnswerSlot } from '../cache/answer-slot'
import { ANY_LANGUAGE, type Loaded } from '../cache/content-cache'
import { render } from '../content/content-answer'
import type { DiscoveryAnswer } from '../discovery/discovery-answer'
import { rejectMethod } from '../http/api-route'
import { JSON_CONTENT_TYPE } from '../http/json-response'
import { CONTENT_ANSWER, EVERY_ANSWER, headers, json, ref, type OpenApiDeclaration, type OpenApiDocument } from '../http/openapi-declarations'
import { DOCS_PATH, OPENAPI_PATH } from './openapi'

export const INDEX_PATH = '/api/v1'

/** The index's body: its schema is in the OpenAPI document. */
export const ApiIndex = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    version: Type.String({ description: "The API's version: `info.version` of the OpenAPI document (package.json's)." }),
    url: Type.String({ description: 'This index.' }),
    openapi: Type.String({ description: 'The OpenAPI document.' }),
    docs: Type.String({ description: 'The interactive reference.' }),
    routes: Type.Array(
      Type.Object(
        {
          name: Type.String({ description: "The operationId of the path's GET in the OpenAPI document." }),
          url: Type.String({ description: 'An RFC 6570 URI template: fill in `{type}` and the like.', examples: ['https://cms.example.com/api/v1/content/{type}'] }),
          methods: Type.Array(Type.String(), { examples: [['GET', 'HEAD', 'OPTIONS']] }),
          summary: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: 'Every path of the OpenAPI document.' },
    ),
  },
  { additionalProperties: false },
)
type IndexRoute = Static<typeof ApiIndex>['routes'][number]

/**
 * The API's index, `GET /api/v1` (C46, as WordPress's `/wp-json`): the
 * service's name and version, and the URL of every route the OpenAPI document
 * describes (so the two never disagree), of the document and of /docs. Built
 * once at start, served through the slot like every answer (ETag, 304,
 * X-Cache); `GET /` redirects (302) to /docs, where a person opening the
 * service in a browser finds the reference.
 * @example new Elysia().use(apiIndex(document, publicUrl, slot))
 */
export function apiIndex(document: OpenApiDocument, publicUrl: string, slot: AnswerSlot) {
  const origin = new URL(publicUrl).origin
  const routes: IndexRoute[] = Object.entries(document.paths).map(([path, operations]) => {
    const get = operations.get as { operationId: string; summary: string }
    return {
      name: get.operationId,
      url: `${origin}${path}`,
      methods: ['get', 'head', 'options'].filter((method) => method in operations).map((method) => method.toUpperCase()),
      summary: get.summary,
    }
  })
  const body: Static<typeof ApiIndex> = {
    name: 'Vitrine content API',
    description: 'A read-only, public JSON API serving published content entries.',
    version: packageJson.version,
    url: `${origin}${INDEX_PATH}`,
    openapi: `${origin}${OPENAPI_PATH}`,
    docs: `${origin}${DOCS_PATH}`,
    routes,
  }
  const rendered = render(body)
  const index: Loaded<DiscoveryAnswer> = {
    value: { status: 200, surrogateKeys: 'index', rendered, link: null },
    bytes: rendered.body.byteLength + 256,
    // It changes only with the settings and extensions the service starts with.
    typeId: null,
    expiresInMs: Infinity,
    language: ANY_LANGUAGE,
  }
  const redirect = new TextEncoder().encode(JSON.stringify({ docs: DOCS_PATH }))

  return new Elysia({ name: 'api-index' })
    .get(INDEX_PATH, async ({ request, set }) => {
      const read = await slot.read(['index'], ANY_LANGUAGE, async () => index)
      return slot.send(request, set, read, renderedOutput(read.value), null)
    })
    .all(INDEX_PATH, ({ request }) => rejectMethod(request))
    // A relative Location: the browser stays on the host it asked, behind any proxy.
    .get('/', () => new Response(redirect, { status: 302, headers: { Location: DOCS_PATH, 'Content-Type': JSON_CONTENT_TYPE } }))
}

/**
 * The index and the redirect to /docs in the OpenAPI document. Change it with
 * `apiIndex` above.
 * @example apiIndexOpenApi().paths['/api/v1']
 */
export function apiIndexOpenApi(): OpenApiDeclaration {
  return {
    schemas: { ApiIndex },
    paths: {
      [INDEX_PATH]: {
        get: {
          operationId: 'getApiIndex',
          tags: ['discovery'],
          summary: "The API's index",
          description: "The service's name and version, and the URL of every path of this document, of this document and of /docs (C46).",
          parameters: [ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': { description: 'The index.', headers: headers(...CONTENT_ANSWER), ...json(ref('schemas', 'ApiIndex')) },
            '304': ref('responses', 'NotModified'),
            '500': ref('responses', 'InternalError'),
          },
        },
        refusedAs: 'ApiIndex',
      },
      '/': {
        get: {
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
        },
      },
    },
  }
}
