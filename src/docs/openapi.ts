import { Elysia } from 'elysia'
import { join } from 'node:path'
import { notFound } from '../http/errors'
import { JSON_CONTENT_TYPE } from '../http/json-response'

const SWAGGER_UI = join(import.meta.dir, '..', '..', 'node_modules', 'swagger-ui-dist')
export const OPENAPI_PATH = '/api/v1/openapi.json'

/** Swagger UI's files, served by us: the reference page needs no network (no CDN). */
export const DOCS_ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
}

// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
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
  <script>window.ui = SwaggerUIBundle({ url: '${OPENAPI_PATH}', dom_id: '#swagger-ui', validatorUrl: null })</script>
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
    .get(OPENAPI_PATH, () => new Response(body, { headers: { 'content-type': JSON_CONTENT_TYPE } }))
    .get('/docs', () => new Response(REFERENCE_PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } }))
    .get('/docs/assets/:file', ({ params }) => {
      const type = DOCS_ASSETS[params.file]
      if (!type) throw notFound()
      return new Response(Bun.file(join(SWAGGER_UI, params.file)), {
        headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
      })
    })
}
