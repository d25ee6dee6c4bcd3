import { Elysia } from 'elysia'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { notFound } from '../http/errors'

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
    return new Response(Bun.file(file.path), { headers: { 'content-type': file.type, 'cache-control': 'public, max-age=86400' } })
  })
}
