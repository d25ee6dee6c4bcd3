/**
 * The reference for uncached answers (issue 45, bench/ceilings.ts): what a
 * developer would write by hand for `GET /api/v1/content/{type}/{slug}` and
 * page 1 of `GET /api/v1/content/{type}`, and nothing else. It shares no code
 * with the service: raw `Bun.serve`, a postgres.js pool of the service's
 * default size, and one statement written for each answer.
 * - The entry: the live entry whose translation in the requested language
 *   (else the default) has the slug, or, failing that, one with no
 *   translation in that language whose default-language slug matches (C19),
 *   the lowest id first; its author, translation (C14), image with two
 *   variants (C15) and terms (C16).
 * - The list: 20 live entries newest first, each with its translation in the
 *   language or else the default, and the type's live entries counted.
 * Each body is the service's to the byte (bench/ceilings.ts checks that
 * before it measures). Prints its port.
 *
 * With `contract` as a third argument, the single entry also does, by hand,
 * what the contract asks of every uncached answer and nothing more: a
 * deadline on the statement that cancels it (C22), the request's id (C29:
 * echoed when sane, else a new one), a strong ETag of the bytes and a 304 on
 * If-None-Match (C32, exact match), and the service's headers (C29's CORS,
 * C33's Cache-Control, C34's Surrogate-Key, X-Cache, nosniff); bench/ceilings.ts
 * checks that its headers are the service's too, but for the id and Date.
 * @example bun bench/reference-server.ts postgres://127.0.0.1/vitrine_bench_100000 http://127.0.0.1:3000/media
 */
import { createHash } from 'node:crypto'
import postgres from 'postgres'

type Sql = ReturnType<typeof postgres>

let mediaBase = ''

interface EntryRow {
  id: number
  published_at: string | null
  created_at: string
  author_id: number | null
  author_name: string | null
  title: string | null
  slug: string | null
  excerpt: string | null
  meta_title: string | null
  meta_description: string | null
  image_path: string | null
  thumbnail: string | null
  medium: string | null
  terms: { id: number; name: string; slug: string }[]
}

const NOT_FOUND = JSON.stringify({ error: 'Not found.' })
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' }

/** An item's columns, written once for both statements: `e`, `t`, `a` and `m` are in scope. */
const itemColumns = (sql: Sql) => sql`
  e.id::int4 as id,
  to_char(e.published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as published_at,
  to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as created_at,
  a.id::int4 as author_id, a.name as author_name,
  t.title, t.slug, t.excerpt, t.meta_title, t.meta_description,
  m.path as image_path,
  (select v.path from media_variants v where v.media_id = m.id and v.name = 'thumbnail') as thumbnail,
  (select v.path from media_variants v where v.media_id = m.id and v.name = 'medium') as medium,
  (
    select coalesce(json_agg(json_build_object('id', term.id, 'name', term.name, 'slug', term.slug) order by et.position, term.id), '[]')
    from entry_terms et join terms term on term.id = et.term_id
    where et.entry_id = e.id
  ) as terms
`

/** The requested language when there is one of that code, else the default; and the default. */
const language = (sql: Sql, lang: string | null) => sql`
  select
    coalesce(max(code) filter (where code = ${lang}), max(code) filter (where is_default)) as selected,
    max(code) filter (where is_default) as fallback
  from languages
`

/** Page 1 of 20, newest first, with the type's live total. */
export function listStatement(sql: Sql, type: string, lang: string | null) {
  return sql<(EntryRow & { total: number })[]>`
    with language as (${language(sql, lang)}),
    type as (select id from content_types where slug = ${type}),
    page as (
      select e.*
      from entries e
      where e.content_type_id = (select id from type)
        and e.status = 'published'
        and (e.published_at is null or e.published_at <= now())
      order by e.published_at desc nulls last, e.id desc
      limit 20
    )
    select
      ${itemColumns(sql)},
      (
        select count(*)::int4 from entries e
        where e.content_type_id = (select id from type) and e.status = 'published' and (e.published_at is null or e.published_at <= now())
      ) as total
    from page e
    cross join language l
    left join lateral (
      select * from entry_translations t
      where t.entry_id = e.id and t.language_code in (l.selected, l.fallback)
      order by t.language_code = l.selected desc
      limit 1
    ) t on true
    left join authors a on a.id = e.author_id
    left join media m on m.id = e.featured_image_id
    order by e.published_at desc nulls last, e.id desc
  `
}

/** The entry of C19 with its item's columns. */
export function entryStatement(sql: Sql, type: string, slug: string, lang: string | null) {
  return sql<EntryRow[]>`
    with language as (${language(sql, lang)})
    select ${itemColumns(sql)}
    from language l
    join entry_translations t on t.slug = ${slug} and t.language_code in (l.selected, l.fallback)
    join entries e on e.id = t.entry_id
    join content_types ct on ct.id = e.content_type_id and ct.slug = ${type}
    left join authors a on a.id = e.author_id
    left join media m on m.id = e.featured_image_id
    where e.status = 'published'
      and (e.published_at is null or e.published_at <= now())
      and (
        t.language_code = l.selected
        or not exists (select 1 from entry_translations s where s.entry_id = e.id and s.language_code = l.selected)
      )
    order by t.language_code = l.selected desc, e.id
    limit 1
  `
}

if (import.meta.main) {
  const url = process.argv[2]!
  mediaBase = (process.argv[3] ?? 'http://localhost:3000/media').replace(/\/+$/, '')
  const contract = process.argv[4] === 'contract'
  const sql = postgres(url, { max: 10, fetch_types: false, onnotice: () => {}, connection: { application_name: 'vitrine-reference', TimeZone: 'UTC' } })
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const { pathname, searchParams } = new URL(request.url)
      const [, , , , type, slug] = pathname.split('/').map((part) => decodeURIComponent(part))
      const lang = searchParams.get('lang')
      if (slug === undefined) {
        const rows = await listStatement(sql, type!, lang)
        const total = rows[0]?.total ?? 0
        const meta = { current_page: 1, last_page: Math.max(1, Math.ceil(total / 20)), per_page: 20, total }
        return new Response(JSON.stringify({ data: rows.map(itemOf), meta }), { headers: JSON_TYPE })
      }
      if (contract) return contractEntry(sql, request, type!, slug, lang)
      const rows = await entryStatement(sql, type!, slug, lang)
      if (!rows[0]) return new Response(NOT_FOUND, { status: 404, headers: JSON_TYPE })
      return new Response(JSON.stringify({ data: itemOf(rows[0]) }), { headers: JSON_TYPE })
    },
  })
  console.log(server.port)
}

function itemOf(row: EntryRow) {
  const image = row.image_path === null ? null : media(row.image_path)
  return {
    id: row.id,
    status: 'published',
    published_at: row.published_at,
    created_at: row.created_at,
    author: row.author_id === null ? null : { id: row.author_id, name: row.author_name },
    title: row.title,
    slug: row.slug,
    excerpt: row.excerpt,
    meta_title: row.meta_title,
    meta_description: row.meta_description,
    featured_image: image === null ? null : { url: image, thumbnail: row.thumbnail === null ? image : media(row.thumbnail), medium: row.medium === null ? image : media(row.medium) },
    terms: row.terms,
  }
}

function media(path: string): string {
  return /^https?:\/\//i.test(path) ? path : `${mediaBase}/${path.replace(/^\/+/, '')}`
}

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/
const DEADLINE_MS = 5000
const encoder = new TextEncoder()

/** The single entry doing what the contract asks of every uncached answer, written by hand (see the top). */
async function contractEntry(sql: Sql, request: Request, type: string, slug: string, lang: string | null): Promise<Response> {
  const incoming = request.headers.get('x-request-id')
  const id = incoming && SANE_ID.test(incoming) ? incoming : crypto.randomUUID()
  const statement = entryStatement(sql, type, slug, lang)
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      statement.cancel()
      reject(new Error('deadline'))
    }, DEADLINE_MS)
  })
  let rows: EntryRow[]
  try {
    rows = await Promise.race([statement, deadline])
  } catch {
    return new Response(JSON.stringify({ error: 'The database is unavailable.' }), { status: 503, headers: { ...JSON_TYPE, 'cache-control': 'no-store', 'retry-after': '1', 'x-request-id': id } })
  } finally {
    clearTimeout(timer)
  }
  const row = rows[0]
  const body = encoder.encode(row ? JSON.stringify({ data: itemOf(row) }) : NOT_FOUND)
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`
  const keys = row ? `type-${type} entry-${row.id} vitrine` : `type-${type} lists-${type} vitrine`
  const headers = {
    'X-Content-Type-Options': 'nosniff',
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Expose-Headers': 'X-Request-Id, Retry-After, Allow, ETag, X-Cache, Age, Surrogate-Key',
    ETag: etag,
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'public, no-cache',
    'Surrogate-Key': keys,
    'X-Cache': 'BYPASS',
    'X-Request-Id': id,
  }
  if (request.headers.get('if-none-match') === etag) {
    const { 'Content-Type': _, ...notModified } = headers
    return new Response(null, { status: 304, headers: notModified })
  }
  return new Response(body, { status: row ? 200 : 404, headers })
}
