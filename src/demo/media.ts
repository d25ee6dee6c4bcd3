import { Elysia } from 'elysia'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { notFound } from '../http/errors'
import { EVERY_ANSWER, errorResponse, headers, pathParameter, type OpenApiDeclaration } from '../http/openapi-declarations'

/** The demo's images: one file for each storage-relative path the demo content names (seed-demo.ts). */
export const DEMO_MEDIA_DIR = join(import.meta.dir, 'media')
export const MEDIA_PATH = '/media/*'

const TYPES: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' }

/**
 * Serves the demo's images under /media, as MEDIA_BASE_URL's default points
 * there (C15), when the service runs its embedded database with the demo
 * content (config.demoMedia). The files are listed once, at start: a request
 * names one of them exactly, or gets 404 `{"error": "Not found."}`, so no
 * path (`..`, percent-encoded or not, a symbolic link) can reach another file.
 * @example new Elysia().use(demoMedia())
 */
export function demoMedia(directory = DEMO_MEDIA_DIR) {
  const files = new Map<string, { path: string; type: string }>()
  for (const name of readdirSync(directory, { recursive: true, encoding: 'utf8' })) {
    const type = TYPES[name.slice(name.lastIndexOf('.') + 1).toLowerCase()]
    if (type) files.set(name.split('\\').join('/'), { path: join(directory, name), type })
  }
  return new Elysia({ name: 'demo-media' }).get(MEDIA_PATH, ({ request }) => {
    // The path as sent, not decoded: only the exact names listed match.
    const pathname = new URL(request.url).pathname
    const file = files.get(pathname.slice('/media/'.length))
    if (!file) throw notFound()
    return new Response(Bun.file(file.path), { headers: { 'Content-Type': file.type, 'Cache-Control': 'public, max-age=86400' } })
  })
}

/**
 * The demo's images in the OpenAPI document, only where they are served: the
 * files under MEDIA_PATH as an item's `featured_image` names them. Change it
 * with `demoMedia` above.
 * @example demoMediaOpenApi().paths['/media/uploads/{year}/{file}']
 */
export function demoMediaOpenApi(): OpenApiDeclaration {
  return {
    paths: {
      '/media/uploads/{year}/{file}': {
        parameters: [
          pathParameter('year', 'A folder of the demo uploads.', '2026'),
          pathParameter('file', 'An image file, as an item\'s `featured_image` names it.', 'photo-1.jpg', { examples: ['photo-1.jpg', 'photo-1-thumbnail.jpg'] }),
        ],
        get: {
          operationId: 'getDemoImage',
          tags: ['documentation'],
          summary: "An image of the demo content (the embedded database's only)",
          responses: {
            '200': { description: 'The image.', headers: headers(...EVERY_ANSWER), content: { 'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } } } },
            '404': errorResponse('No such image.', ['Not found.'], EVERY_ANSWER),
          },
        },
      },
    },
  }
}
