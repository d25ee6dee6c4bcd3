import { Elysia } from 'elysia'
import { join } from 'node:path'
import { notFound } from '../http/errors'
import { JSON_CONTENT_TYPE } from '../http/json-response'
import { EVERY_ANSWER, errorResponse, headers, json, pathParameter, type OpenApiDeclaration } from '../http/openapi-declarations'

const SWAGGER_UI = join(import.meta.dir, '..', '..', 'node_modules', 'swagger-ui-dist')
export const OPENAPI_PATH = '/api/v1/openapi.json'
export const DOCS_PATH = '/docs'
const DOCS_ASSET_PATH = '/docs/assets/:file'

/** Swagger UI's files, served by us: the reference page needs no network (no CDN). */
export const DOCS_ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
}

/*
 * The page is for people, the document for validators and clients. Every path
 * of the document also has HEAD, OPTIONS and, on an API path, the refused
 * POST, PUT, PATCH and DELETE (C3, C29): shown, they made a read-only API look
 * like a write API. A plugin keeps the page to each path's GET, reading the
 * same document (no second one to keep in step). Tags come in the document's
 * order. A `text/event-stream` answer never ends: "Execute" shows what it sent
 * in its first seconds, then closes it. validatorUrl null: Swagger UI would
 * otherwise send the document to an online validator.
 */
const PAGE_SCRIPT = `
const EVENT_STREAM_SECONDS = 3
const onlyGetOperations = () => ({
  statePlugins: {
    spec: {
      wrapSelectors: {
        taggedOperations: (selector, system) => (...args) => {
          const tagged = selector(...args)
          return (typeof tagged === 'function' ? tagged(system) : tagged)
            .map((tag) => tag.update('operations', (operations) => operations.filter((operation) => operation.get('method') === 'get')))
        },
      },
    },
  },
})
async function fetchReadingStreamsBriefly(url, init) {
  const closing = new AbortController()
  init.signal?.addEventListener('abort', () => closing.abort())
  const response = await fetch(url, { ...init, signal: closing.signal })
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const timer = setTimeout(() => closing.abort(), EVENT_STREAM_SECONDS * 1000)
  let text = ''
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true })
  } catch {}
  clearTimeout(timer)
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers })
}
window.ui = SwaggerUIBundle({
  url: '${OPENAPI_PATH}',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  plugins: [onlyGetOperations],
  // The webhooks (C57) are shown as what the service sends; only the GETs of the paths can be tried.
  supportedSubmitMethods: ['get'],
  requestInterceptor: (request) => Object.assign(request, { userFetch: fetchReadingStreamsBriefly }),
})
`

const REFERENCE_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Vitrine content API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>${PAGE_SCRIPT}</script>
</body>
</html>
`

/**
 * Serves the OpenAPI document at /api/v1/openapi.json, as the bytes it was
 * given at start (every request gets the same ones), and an interactive
 * reference at /docs.
 * @example new Elysia().use(apiDocumentation(buildOpenApiDocument({ publicUrl, itemSchema })))
 */
export function apiDocumentation(document: object) {
  const body = JSON.stringify(document)
  return new Elysia({ name: 'api-documentation' })
    .get(OPENAPI_PATH, () => new Response(body, { headers: { 'Content-Type': JSON_CONTENT_TYPE } }))
    .get(DOCS_PATH, () => new Response(REFERENCE_PAGE, { headers: { 'Content-Type': 'text/html; charset=utf-8' } }))
    .get(DOCS_ASSET_PATH, ({ params }) => {
      const type = DOCS_ASSETS[params.file]
      if (!type) throw notFound()
      return new Response(Bun.file(join(SWAGGER_UI, params.file)), {
        headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400' },
      })
    })
}

/**
 * This document, its reference page and the page's files in the OpenAPI
 * document. Change it with `apiDocumentation` above.
 * @example apiDocumentationOpenApi().paths['/api/v1/openapi.json']
 */
export function apiDocumentationOpenApi(): OpenApiDeclaration {
  return {
    paths: {
      [OPENAPI_PATH]: {
        get: {
          operationId: 'getOpenApiDocument',
          tags: ['documentation'],
          summary: 'This document',
          responses: { '200': { description: 'The OpenAPI 3.1 document, the same bytes on every request of an instance.', headers: headers(...EVERY_ANSWER), ...json({ type: 'object' }) } },
        },
      },
      [DOCS_PATH]: {
        get: {
          operationId: 'getDocs',
          tags: ['documentation'],
          summary: 'The interactive reference (Swagger UI) of this document',
          description: 'Each path with its GET: the HEAD, OPTIONS and refused methods of every path are in this document, not on the page.',
          responses: { '200': { description: 'An HTML page; its scripts and styles come from /docs/assets, never from another host.', headers: headers(...EVERY_ANSWER), content: { 'text/html': { schema: { type: 'string' } } } } },
        },
      },
      [DOCS_ASSET_PATH]: {
        parameters: [pathParameter('file', 'One of the files of the reference page.', 'swagger-ui.css', { enum: Object.keys(DOCS_ASSETS) })],
        get: {
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
        },
      },
    },
  }
}
