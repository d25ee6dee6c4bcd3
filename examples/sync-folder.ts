/**
 * Keeps a folder of JSON files in sync with one content type (C48): one file
 * per live entry (`<id>.json`, the item as lists show it), and `.sync-url`,
 * the URL to ask next. Run it as often as you like (before each build of a
 * static site): the first run downloads every entry, later runs only what
 * changed, deletions included. A 410 (the token expired) starts over.
 *
 *   bun examples/sync-folder.ts https://cms.example.com post ./content/post
 *
 * @example await syncFolder({ baseUrl: 'https://cms.example.com', type: 'post', folder: './content/post' })
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface SyncFolderOptions {
  baseUrl: string
  type: string
  folder: string
  /** Defaults to the global fetch; tests hand in the app's. */
  fetch?: (url: string) => Promise<Response>
}

/** What one run did: files written and removed, and whether it started a new sync. */
export interface SyncFolderResult {
  written: number
  removed: number
  fresh: boolean
}

export async function syncFolder({ baseUrl, type, folder, fetch = globalThis.fetch }: SyncFolderOptions): Promise<SyncFolderResult> {
  await mkdir(folder, { recursive: true })
  const saved = Bun.file(join(folder, '.sync-url'))
  const start = `${baseUrl}/api/v1/sync/${encodeURIComponent(type)}`
  let url: string = (await saved.exists()) ? (await saved.text()).trim() : start
  let fresh = url === start
  const result = { written: 0, removed: 0, fresh }
  const seen = new Set<string>()
  for (;;) {
    const response = await fetch(url)
    if (response.status === 410 && !fresh) {
      // Expired: start over, and drop afterwards whatever the new sync did not bring.
      url = start
      fresh = result.fresh = true
      continue
    }
    if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
    const page = (await response.json()) as { data: ({ id: number } | null)[]; deleted: number[]; meta: { next_page_url: string | null; next_sync_url: string | null } }
    for (const item of page.data) {
      // An extension may withhold an item (null): nothing to write.
      if (item === null) continue
      await writeFile(join(folder, `${item.id}.json`), `${JSON.stringify(item, null, 2)}\n`)
      seen.add(`${item.id}.json`)
      result.written++
    }
    for (const id of page.deleted) {
      await rm(join(folder, `${id}.json`), { force: true })
      result.removed++
    }
    if (page.meta.next_sync_url !== null) {
      if (fresh) {
        for (const name of await readdir(folder)) {
          if (name.endsWith('.json') && !seen.has(name)) {
            await rm(join(folder, name))
            result.removed++
          }
        }
      }
      // Written last: a run that fails half-way starts again from the same URL.
      await writeFile(join(folder, '.sync-url'), page.meta.next_sync_url)
      return result
    }
    url = page.meta.next_page_url!
  }
}

if (import.meta.main) {
  const [baseUrl, type, folder] = process.argv.slice(2)
  if (!baseUrl || !type || !folder) {
    console.error('usage: bun examples/sync-folder.ts <base URL> <type> <folder>')
    process.exit(2)
  }
  const result = await syncFolder({ baseUrl: baseUrl.replace(/\/+$/, ''), type, folder })
  console.log(`${result.fresh ? 'full sync' : 'delta'}: ${result.written} written, ${result.removed} removed`)
}
