/**
 * `bun run test:prism`: the OpenAPI document as an outside validating proxy
 * reads it (issue 21). Starts the service (`bun run start` on an embedded
 * database with the demo content, in a temporary DATA_DIR), puts Stoplight
 * Prism in front of it (`bunx @stoplight/prism-cli@5 proxy`, fetched by bunx,
 * not a dependency: it brings about 750 packages) with the document the
 * service serves, and sends through Prism the requests of the corpus of
 * test/openapi-corpus.test.ts (test/support/request-corpus.ts) on the demo
 * site, then every documented path and method (HEAD, OPTIONS as a CORS
 * preflight, the 405s), the discovery, sync and fields routes, conditional
 * requests and bad input.
 *
 * Prism checks each request and answer against the document and names what
 * breaks it in an `sl-violations` header. A fault is a violation of an answer,
 * or a request the document refuses that the service answered as valid (2xx,
 * 3xx): the contract decides which of the two is wrong. A request the document
 * refuses and the service answers 4xx is bad input refused by both.
 * Reported apart, as limits: Prism's proxy follows redirects
 * (stoplightio/prism#1977), so `GET /` is checked as the /docs page it leads
 * to; and a path with a trailing slash (C3 answers it as the path without),
 * which OpenAPI cannot describe but by a second path item per path: Prism
 * reads `/api/v1/content/post/` as an entry with an empty slug.
 *
 * PRISM_SERVICE_URL: a service already running (its database needs content:
 * `bun run seed:demo`); unset: started here. PRISM_PORT (default 4010).
 * Exits 1 when Prism reported a fault, printing each with its requests.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateRequests } from '../test/support/request-corpus'
import { startService, type RunningService } from '../test/support/service'

interface Probe {
  method: string
  path: string
  headers?: Record<string, string>
}

interface Violation {
  location: string[]
  severity: string
  message: string
}

const prismPort = Number(process.env.PRISM_PORT ?? 4010)
const folder = await mkdtemp(join(tmpdir(), 'vitrine-prism-'))
// Run as root, the embedded PostgreSQL runs as another user, who must reach its folder.
await chmod(folder, 0o755)
let service: RunningService | undefined
let prism: ReturnType<typeof Bun.spawn> | undefined
try {
  let serviceUrl = process.env.PRISM_SERVICE_URL
  if (!serviceUrl) {
    service = await startService({ DATA_DIR: join(folder, 'data'), PORT: '0' }, { timeoutMs: 120_000, keepOutput: false })
    serviceUrl = service.url
  }
  const documentPath = join(folder, 'openapi.json')
  await writeFile(documentPath, await (await fetch(`${serviceUrl}/api/v1/openapi.json`)).text())
  prism = Bun.spawn(['bunx', '@stoplight/prism-cli@5', 'proxy', documentPath, serviceUrl, '--host', '127.0.0.1', '--port', String(prismPort)], { stdout: 'pipe', stderr: 'pipe' })
  await waitForPrism(prism)
  const probes = await probesOf(serviceUrl, JSON.parse(await Bun.file(documentPath).text()))
  const faults = new Map<string, string[]>()
  const refused = new Map<string, string[]>()
  const limits: string[] = []
  const note = (into: Map<string, string[]>, violation: Violation, request: string) => {
    const key = `${violation.location.join('.')}: ${violation.message}`
    into.set(key, [...(into.get(key) ?? []), request])
  }
  for (const probe of probes) {
    const response = await fetch(`http://127.0.0.1:${prismPort}${probe.path}`, { method: probe.method, headers: probe.headers, redirect: 'manual' })
    await response.arrayBuffer()
    const request = `${probe.method} ${probe.path} -> ${response.status}`
    const violations: Violation[] = JSON.parse(response.headers.get('sl-violations') ?? '[]')
    const pathname = new URL(probe.path, 'http://x').pathname
    if (pathname === '/' || (pathname.length > 1 && pathname.endsWith('/'))) {
      const why = pathname === '/' ? 'Prism followed the redirect' : 'a trailing slash (C3), which no OpenAPI path can make optional'
      limits.push(`${request}: ${why} (${violations.map((violation) => violation.message).join('; ') || 'no violation'})`)
      continue
    }
    for (const violation of violations) {
      const refusedInput = violation.location[0] === 'request' && response.status >= 400 && response.status < 500
      note(refusedInput ? refused : faults, violation, request)
    }
  }
  const print = (title: string, found: Map<string, string[]>) => {
    console.log(`\n${title}: ${found.size}`)
    for (const [violation, requests] of found) console.log(`- ${violation}\n    ${requests.slice(0, 4).join('\n    ')}${requests.length > 4 ? `\n    … and ${requests.length - 4} more` : ''}`)
  }
  console.log(`${probes.length} requests through Prism on port ${prismPort}.`)
  print('Faults (answers off the document, or valid requests it refuses)', faults)
  print('Bad input refused by both (the document refuses it, the service answers 4xx)', refused)
  console.log(`\nLimits (not checked): ${limits.length}${limits.map((limit) => `\n- ${limit}`).join('')}`)
  process.exitCode = faults.size === 0 ? 0 : 1
} finally {
  prism?.kill()
  await service?.stop()
  await rm(folder, { recursive: true, force: true })
}

/** Waits until Prism listens; its output is read to the end (a stream left unread would stop it on a full pipe). */
async function waitForPrism(child: ReturnType<typeof Bun.spawn>): Promise<void> {
  let text = ''
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  }
  void read(child.stdout as ReadableStream<Uint8Array>)
  void read(child.stderr as ReadableStream<Uint8Array>)
  const deadline = Date.now() + 120_000
  while (!text.includes('Prism is listening')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`Prism did not start:\n${text}`)
    await Bun.sleep(100)
  }
}

/** Every documented path and method, with the content of the service the probes ask for. */
async function probesOf(serviceUrl: string, document: any): Promise<Probe[]> {
  const get = async (path: string) => (await fetch(`${serviceUrl}${path}`)).json() as Promise<any>
  const types: string[] = (await get('/api/v1/content-types')).data.map((type: any) => type.slug)
  const taxonomies: string[] = (await get('/api/v1/taxonomies')).data.map((taxonomy: any) => taxonomy.slug)
  const languages: string[] = (await get('/api/v1/languages')).data.map((language: any) => language.code)
  const items: any[] = (await get(`/api/v1/content/${types[0]}?per_page=5`)).data
  const term = (await get(`/api/v1/taxonomies/${taxonomies[0]}/terms`)).data[0]
  const image = new URL(items.find((item) => item.featured_image)?.featured_image.url ?? `${serviceUrl}/media/uploads/2026/none.jpg`).pathname
  const etag = (await fetch(`${serviceUrl}/api/v1/content/${types[0]}`)).headers.get('etag') ?? '"none"'
  const sync = await get(`/api/v1/sync/${types[0]}?per_page=2`)
  const next = sync.meta?.next_page_url ? new URL(sync.meta.next_page_url).pathname + new URL(sync.meta.next_page_url).search : `/api/v1/sync/${types[0]}`
  const list = `/api/v1/content/${types[0]}`
  const entry = `${list}/${items[0].slug}`
  const slugs = (await Promise.all(types.map(async (type) => (await get(`/api/v1/content/${type}?per_page=100`)).data.map((item: any) => item.slug)))).flat()
  const probes: Probe[] = generateRequests(1, 300, { types, languages, slugs }).map((request) => ({ method: request.method.toUpperCase(), path: request.url, headers: request.headers }))
  for (const type of [...types, 'nope']) {
    probes.push({ method: 'GET', path: `/api/v1/content/${type}` })
    probes.push({ method: 'GET', path: `/api/v1/sync/${type}` })
  }
  for (const lang of [...languages, 'xx']) {
    probes.push({ method: 'GET', path: `${list}?lang=${lang}` }, { method: 'GET', path: `${entry}?lang=${lang}&include=alternates` })
  }
  probes.push(
    { method: 'GET', path: `${list}?page=2&per_page=2` },
    { method: 'GET', path: `${list}?page=99` },
    { method: 'GET', path: `${list}?per_page=500` },
    { method: 'GET', path: `${list}/` },
    { method: 'GET', path: `${list}?fields=id,slug,title` },
    { method: 'GET', path: `${list}?fields=slug,alternates&include=alternates` },
    { method: 'GET', path: `${list}?term=${taxonomies[0]}:${term?.slug ?? 'none'}` },
    { method: 'GET', path: `${list}?term=${taxonomies[0]}:${term?.slug ?? 'none'},${taxonomies[1] ?? taxonomies[0]}:none` },
    { method: 'GET', path: `${list}?author=${items[0].author?.id ?? 1}` },
    { method: 'GET', path: `${list}?search=content` },
    { method: 'GET', path: `${list}?search=content&order=date` },
    { method: 'GET', path: entry },
    { method: 'GET', path: `${entry}?fields=id,title` },
    { method: 'GET', path: `${list}/no-such-entry` },
    { method: 'GET', path: list, headers: { 'if-none-match': etag } },
    { method: 'GET', path: list, headers: { origin: 'https://example.org' } },
    { method: 'GET', path: `/api/v1/sync/${types[0]}?per_page=2` },
    { method: 'GET', path: next },
    { method: 'GET', path: '/api/v1/languages' },
    { method: 'GET', path: '/api/v1/content-types' },
    { method: 'GET', path: '/api/v1/taxonomies' },
    { method: 'GET', path: '/api/v1' },
    { method: 'GET', path: '/api/v1/openapi.json' },
    { method: 'GET', path: '/docs' },
    { method: 'GET', path: '/docs/assets/swagger-ui.css' },
    { method: 'GET', path: '/docs/assets/nope.js' },
    { method: 'GET', path: '/' },
    { method: 'GET', path: '/healthz' },
    { method: 'GET', path: '/readyz' },
    { method: 'GET', path: image },
    { method: 'GET', path: '/media/uploads/2026/none.jpg' },
  )
  for (const path of [list, entry, '/api/v1/languages', `/api/v1/taxonomies/${taxonomies[0]}/terms`]) probes.push({ method: 'GET', path: `${path}/` })
  for (const taxonomy of [...taxonomies, 'nope']) {
    probes.push({ method: 'GET', path: `/api/v1/taxonomies/${taxonomy}/terms` }, { method: 'GET', path: `/api/v1/taxonomies/${taxonomy}/terms?type=${types[0]}&page=1&per_page=2` })
  }
  probes.push({ method: 'GET', path: `/api/v1/taxonomies/${taxonomies[0]}/terms?type=nope` }, { method: 'GET', path: `/api/v1/taxonomies/${taxonomies[0]}/terms?page=5` })
  // Bad input: 400s (C6, C40–C44, C48).
  for (const query of ['page=0', 'page=x', 'page=1.5', 'per_page=-1', 'per_page=abc', 'term=news', 'author=x', `search=${'x'.repeat(201)}`, 'order=up', 'fields=nope', 'include=terms']) {
    probes.push({ method: 'GET', path: `${list}?${query}` })
  }
  probes.push({ method: 'GET', path: `/api/v1/taxonomies/${taxonomies[0]}/terms?page=0` }, { method: 'GET', path: `/api/v1/sync/${types[0]}?per_page=5000` })
  probes.push({ method: 'GET', path: `/api/v1/sync/${types[0]}?token=nope` })
  // Every other method the document names for a path (HEAD, OPTIONS as a preflight, the 405s), on a path of the site.
  const examples: Record<string, string> = {
    '/api/v1/content/{type}': list,
    '/api/v1/content/{type}/{slug}': entry,
    '/api/v1/sync/{type}': `/api/v1/sync/${types[0]}`,
    '/api/v1/taxonomies/{taxonomy}/terms': `/api/v1/taxonomies/${taxonomies[0]}/terms`,
    '/docs/assets/{file}': '/docs/assets/swagger-ui.css',
    '/media/uploads/{year}/{file}': image,
  }
  for (const [template, operations] of Object.entries<Record<string, unknown>>(document.paths)) {
    const path = examples[template] ?? template
    for (const method of Object.keys(operations).filter((key) => key !== 'get' && key !== 'parameters')) {
      probes.push(method === 'options' ? { method: 'OPTIONS', path, headers: { origin: 'https://example.org', 'access-control-request-method': 'GET' } } : { method: method.toUpperCase(), path })
    }
  }
  return probes
}
