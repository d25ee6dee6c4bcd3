/**
 * The ceiling of an uncached single entry (bench/cache.ts): Bun.serve and a
 * postgres.js pool with the service's own settings, running the same slug
 * statement and returning its item as JSON, with nothing else: no framework,
 * no parameters checked, no ETag, no log. Prints its port.
 * @example bun bench/minimal-server.ts postgres://127.0.0.1/vitrine_bench
 */
import { loadConfig } from '../src/config'
import { findLiveEntryBySlug } from '../src/content/entry-statement'
import { toItem } from '../src/content/map-item'
import { openReadPool } from '../src/db/connect'

const url = process.argv[2]!
const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'warn' })
const sql = openReadPool(url, config)
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const { pathname, searchParams } = new URL(request.url)
    const [, , , , type, slug] = pathname.split('/')
    const { row } = await findLiveEntryBySlug(sql, { type: type!, lang: searchParams.get('lang') ?? undefined, slug: slug! })
    return new Response(JSON.stringify({ data: row && toItem(row, config.mediaBaseUrl) }), { headers: { 'content-type': 'application/json; charset=utf-8' } })
  },
})
console.log(server.port)
