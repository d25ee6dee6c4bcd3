import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import { join } from 'node:path'
import { notFound } from '../http/errors'

const SWAGGER_UI = join(import.meta.dir, '..', '..', 'node_modules', 'swagger-ui-dist')
export const OPENAPI_PATH = '/api/v1/openapi.json'

/** Swagger UI's files, served by us: the reference page needs no network (no CDN). */
const ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
}

/**
 * The OpenAPI 3.1 document at /api/v1/openapi.json, generated from the
 * routes' TypeBox schemas, and an interactive reference at /docs.
 * @example new Elysia().use(apiDocumentation()).use(contentRoutes(deps))
 */
export function apiDocumentation() {
  return new Elysia({ name: 'api-documentation' })
    .get(
      '/docs/assets/:file',
      ({ params }) => {
        const type = ASSETS[params.file]
        if (!type) throw notFound()
        return new Response(Bun.file(join(SWAGGER_UI, params.file)), {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
        })
      },
      { detail: { hide: true } },
    )
    .use(
      openapi({
        path: '/docs',
        specPath: OPENAPI_PATH,
        provider: 'swagger-ui',
        swagger: {
          cdn: '/docs/assets/swagger-ui-bundle.js',
          theme: '/docs/assets/swagger-ui.css',
          url: OPENAPI_PATH,
          // Swagger UI would otherwise send the document to an online validator.
          validatorUrl: null,
        } as never,
        exclude: { paths: ['/docs', '/docs/assets/:file', OPENAPI_PATH] },
        documentation: {
          info: {
            title: 'Vitrine content API',
            version: '1.4.0',
            description: [
              'A read-only, public JSON API serving published content entries.',
              '',
              'Items have the fields documented here. **Extensions may add fields, or remove them**, through the',
              'filter hook `service/api/content-item`: clients should ignore fields they do not know.',
              'Responses vary by `lang` and by every request header an extension reads (see the `Vary` header).',
            ].join('\n'),
          },
          tags: [
            { name: 'content', description: 'Published content entries' },
            { name: 'operations', description: 'Probes for orchestrators and load balancers' },
          ],
        },
      }),
    )
}
