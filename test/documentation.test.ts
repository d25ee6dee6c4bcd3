import { afterAll, describe, expect, test } from 'bun:test'
import { readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { connectDatabase } from '../src/db/connect'
import { seedDemo } from '../src/demo/seed-demo'
import { loadExtensions } from '../src/hooks/loader'
import { syncFolder } from '../examples/sync-folder'
import { startReceiver, type VitrineMessage } from '../examples/webhook-receiver'
import { sendMessage } from '../src/webhooks/send'
import { testApp } from './support/app'
import { cachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { eventTestApp } from './support/event-stream'
import { temporaryFolder } from './support/leftovers'

/**
 * Issue 31: the documentation runs. Every `curl` line of README.md, docs/*.md and
 * src/hooks/README.md is sent, in process, to the app serving the demo content,
 * and answers as the text says (docs/README.md, "Examples that run"); every file
 * under examples/ and src/hooks/examples/ is loaded and, where it needs no
 * network, run. A renamed route or parameter fails here.
 */
const ROOT = join(import.meta.dir, '..')
const DOCS = join(ROOT, 'docs')
const DOCUMENTS = ['README.md', 'src/hooks/README.md', ...(await readdir(DOCS)).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

const db = await createTestDatabase()
await seedDemo(db.sql)
// As `bun run start` serves the demo: its cache and listener, PUBLIC_URL at localhost:3000, the demo's
// images under /media (what the supervisor tells a worker of the embedded database).
const demoEnv = { PUBLIC_URL: 'http://localhost:3000', VITRINE_WORKER: '1', VITRINE_DEMO_MEDIA: '1' }
const api = await cachedTestApp(db.url, demoEnv)
const events = await eventTestApp(db.url, {}, demoEnv)
afterAll(async () => {
  await events.cancelStreams()
  await events.close()
  await api.close()
  await db.sql.end()
})

/** One fact a `# →` line states: a path into the body (or `headers.name`) and its JSON value. */
interface Fact {
  path: string
  value: unknown
}

interface CurlExample {
  /** `README.md:42`, to find it. */
  place: string
  command: string
  method: 'GET' | 'HEAD'
  /** Path and query, as the service sees them. */
  target: string
  headers: Record<string, string>
  status: number
  facts: Fact[]
}

/**
 * The `curl` lines of a markdown text's code blocks, each with what the line
 * below it says (`# → 404; error = "Not found."`), or 200 and nothing more.
 * @example curlExamples('README.md', text)[0].target // '/api/v1/content/post'
 */
function curlExamples(file: string, text: string): CurlExample[] {
  const lines = text.split('\n')
  const examples: CurlExample[] = []
  let inBlock = false
  lines.forEach((line, index) => {
    if (/^\s*```/.test(line)) inBlock = !inBlock
    const command = line.trim().replace(/^\$ /, '')
    if (!inBlock || !/^curl\s/.test(command)) return
    const expectation = /^\s*# → (.*)$/.exec(lines[index + 1] ?? '')?.[1]
    examples.push({ place: `${file}:${index + 1}`, command, ...parseCurl(command), ...parseExpectation(expectation ?? '200') })
  })
  return examples
}

function parseCurl(command: string): Pick<CurlExample, 'method' | 'target' | 'headers'> {
  const words = shellWords(command).slice(1)
  let method: 'GET' | 'HEAD' = 'GET'
  const headers: Record<string, string> = {}
  let url: string | undefined
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    if (word === '-I') method = 'HEAD'
    else if (word === '-H') {
      const [name, ...value] = words[++i].split(':')
      headers[name.trim()] = value.join(':').trim()
    } else if (['-s', '-i', '-N'].includes(word)) continue
    else if (word.startsWith('-')) throw new Error(`${command}: the documentation test does not know curl's ${word}`)
    else url = word
  }
  const match = /^(?:http:\/\/)?localhost:3000(\/.*)$/.exec(url ?? '')
  if (!match || match[1].includes('…')) throw new Error(`${command}: not a URL of the demo at localhost:3000 that runs as written`)
  return { method, target: match[1], headers }
}

/** Words as a shell splits them: quotes kept together, an unquoted `#` starts a comment. */
function shellWords(command: string): string[] {
  const words: string[] = []
  for (const [, single, double, bare] of command.matchAll(/'([^']*)'|"([^"]*)"|(#.*$|[^\s'"]+)/g)) {
    if (bare?.startsWith('#')) break
    words.push(single ?? double ?? bare)
  }
  return words
}

function parseExpectation(text: string): Pick<CurlExample, 'status' | 'facts'> {
  const stated = /^(\d{3})((?:;\s*[\w.[\]-]+\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^;"]+))*)$/.exec(text.trim())
  if (!stated) throw new Error(`"# → ${text}" must be a status, then facts: "; path = JSON value"`)
  const facts = [...stated[2].matchAll(/;\s*([\w.[\]-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;"]+)/g)].map(([, path, value]) => ({ path, value: JSON.parse(value.trim()) }))
  return { status: Number(stated[1]), facts }
}

/** `data[0].slug`, `meta.total`, `data.length`, or `headers.content-type` (a header's value, null when absent). */
function factValue(path: string, body: unknown, headers: Headers): unknown {
  if (path.startsWith('headers.')) return headers.get(path.slice('headers.'.length))
  return path
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .reduce<any>((value, key) => (value === undefined || value === null ? undefined : value[key]), body)
}

/** The app that serves `target`: the event stream has a feed of its own. */
async function send(example: Pick<CurlExample, 'method' | 'target' | 'headers'>, served: { app: { handle(request: Request): Promise<Response> } } = api) {
  const app = example.target.startsWith('/api/v1/events') ? events.app : served.app
  const response = await app.handle(new Request(`http://localhost${example.target}`, { method: example.method, headers: example.headers }))
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A stream never ends by itself: its status and headers are what the text can state.
    await response.body?.cancel()
    return { response, body: undefined }
  }
  const text = await response.text()
  return { response, body: text ? JSON.parse(text) : undefined }
}

const documents = await Promise.all(DOCUMENTS.map(async (file) => ({ file, text: await Bun.file(join(ROOT, file)).text() })))
/** Pages whose curl lines need the page's own SQL run first (on a database of their own): not run on the demo as it is. */
const WRITING = 'docs/writing-content.md'
const examples = documents.filter(({ file }) => file !== WRITING).flatMap(({ file, text }) => curlExamples(file, text))

describe('every curl line of the documentation answers as the text says', () => {
  test('there are curl lines in the README and in docs/', () => {
    expect(examples.filter((example) => example.place.startsWith('README.md')).length).toBeGreaterThanOrEqual(10)
    expect(examples.filter((example) => example.place.startsWith('docs/')).length).toBeGreaterThanOrEqual(20)
  })

  for (const example of examples) {
    test(`${example.place}: ${example.command}`, async () => {
      const { response, body } = await send(example)
      const seen = { status: response.status, ...Object.fromEntries(example.facts.map(({ path }) => [path, factValue(path, body, response.headers)])) }
      expect(seen).toEqual({ status: example.status, ...Object.fromEntries(example.facts.map(({ path, value }) => [path, value])) })
    })
  }
})

describe('docs/writing-content.md: its SQL, run in order on the demo content, does what its curl lines say', () => {
  const page = documents.find(({ file }) => file === WRITING)!
  const blocks = [...page.text.matchAll(/^```sql\n([\s\S]*?)^```/gm)].map(([, block]) => block!)
  const curls = curlExamples(page.file, page.text)

  test('the page has SQL that publishes, translates, schedules and unpublishes, and curl lines that check it', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5)
    expect(curls.length).toBeGreaterThanOrEqual(5)
  })

  test('each block runs, then every curl line answers as the text says', async () => {
    const own = await createTestDatabase()
    await seedDemo(own.sql)
    const served = await cachedTestApp(own.url, demoEnv)
    // As psql runs a block: one session (its begin and commit, its currval).
    const session = connectDatabase(own.url, { max: 1 })
    try {
      // Each block and the curl lines that follow it, in the page's order.
      let next = 0
      for (const [index, block] of blocks.entries()) {
        await session.unsafe(block)
        const blockEnd = page.text.indexOf(block) + block.length
        const upTo = index + 1 < blocks.length ? page.text.indexOf(blocks[index + 1]!) : page.text.length
        const lineOf = (offset: number) => page.text.slice(0, offset).split('\n').length
        for (; next < curls.length && Number(curls[next]!.place.split(':')[1]) < lineOf(upTo); next++) {
          const example = curls[next]!
          if (Number(example.place.split(':')[1]) < lineOf(blockEnd)) continue
          // Answers follow a commit within the listener's round trip.
          let seen: Record<string, unknown> = {}
          const wanted = { status: example.status, ...Object.fromEntries(example.facts.map(({ path, value }) => [path, value])) }
          for (let tries = 0; tries < 50; tries++) {
            const { response, body } = await send(example, served)
            seen = { status: response.status, ...Object.fromEntries(example.facts.map(({ path }) => [path, factValue(path, body, response.headers)])) }
            if (Bun.deepEquals(seen, wanted)) break
            await Bun.sleep(20)
          }
          expect([example.place, seen]).toEqual([example.place, wanted])
        }
      }
      expect(next).toBe(curls.length)
    } finally {
      await session.end()
      await served.close()
      await own.sql.end()
    }
  })
})

describe('docs/frontend.md: its walk and its typed client', () => {
  const page = documents.find(({ file }) => file === 'docs/frontend.md')!
  const blocks = [...page.text.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map(([, block]) => block!)

  test('its TypeScript blocks compile', () => {
    expect(blocks.length).toBe(2)
    for (const block of blocks) new Bun.Transpiler({ loader: 'ts' }).transformSync(block)
  })

  test('the walk by Link header, run against the demo, yields every live post once', async () => {
    const walk = blocks.find((block) => block.includes('allEntries'))!
    // The page's own function, with fetch answered by the app, the loop at its end left out, and pages of 7 (so that
    // the walk takes several).
    const source = new Bun.Transpiler({ loader: 'ts' }).transformSync(walk.slice(0, walk.indexOf('for await')).replace('per_page=100', 'per_page=7'))
    let requests = 0
    const allEntries = new Function('fetch', `${source}; return allEntries`)((url: string) => (requests++, api.app.handle(new Request(url)))) as (type: string) => AsyncGenerator<{ id: number }>
    const seen: number[] = []
    for await (const entry of allEntries('post')) seen.push(entry.id)
    const { body } = await send({ method: 'GET', target: '/api/v1/content/post', headers: {} })
    expect(seen.length).toBe(body.meta.total)
    expect(new Set(seen).size).toBe(seen.length)
    expect(requests).toBe(Math.ceil(body.meta.total / 7))
  })
})

describe('every example under examples/ and src/hooks/examples/ loads and runs', () => {
  test('examples/ holds only the examples this test knows how to run', async () => {
    expect((await readdir(join(ROOT, 'examples'))).sort()).toEqual(['live-list.html', 'sync-folder.ts', 'webhook-receiver.ts'])
  })

  test('examples/sync-folder.ts copies the demo posts, as docs/sync-and-events.md says, then has nothing new', async () => {
    const temporary = await temporaryFolder('vitrine-documentation-')
    const folder = temporary.path
    try {
      const options = { baseUrl: 'http://localhost:3000', type: 'post', folder, fetch: (url: string) => api.app.handle(new Request(url)) }
      const shown = /^full sync: (\d+) written, 0 removed$/m.exec(await Bun.file(join(DOCS, 'sync-and-events.md')).text())
      const { body } = await send({ method: 'GET', target: '/api/v1/content/post', headers: {} })
      expect(await syncFolder(options)).toEqual({ written: body.meta.total, removed: 0, fresh: true })
      expect(Number(shown?.[1])).toBe(body.meta.total)
      expect(await syncFolder(options)).toEqual({ written: 0, removed: 0, fresh: false })
    } finally {
      await temporary.remove()
    }
  })

  test('examples/live-list.html: its script compiles, and the list and stream it asks for answer', async () => {
    const page = await Bun.file(join(ROOT, 'examples', 'live-list.html')).text()
    const script = /<script type="module">([\s\S]*?)<\/script>/.exec(page)![1]
    new Bun.Transpiler({ loader: 'js' }).transformSync(script)
    const asked = [...script.matchAll(/`\$\{api\}(\/[^`]*)`/g)].map(([, url]) => url.replaceAll('${encodeURIComponent(type)}', 'post'))
    expect(asked).toHaveLength(2)
    for (const target of asked) {
      const { response, body } = await send({ method: 'GET', target, headers: {} })
      expect([target, response.status]).toEqual([target, 200])
      if (body) expect(body.data.length).toBe(10)
      else expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    }
  })

  test('examples/webhook-receiver.ts, as docs/webhooks.md runs it: takes a message the service signs (once, though sent twice), refuses a forged or unsigned one', async () => {
    const secret = `whsec_${Buffer.from('a secret of thirty-two bytes!!!!').toString('base64')}`
    const got: [string, VitrineMessage][] = []
    const server = startReceiver({ secret, port: 0, onMessage: (message, id) => void got.push([id, message]) })
    try {
      const url = `http://127.0.0.1:${server.port}/`
      const body = JSON.stringify({ type: 'entry.updated', timestamp: new Date().toISOString(), data: { id: 7, type: 'post', urls: {} } })
      const signed = { url, secret, id: 'msg_example', body }
      expect((await sendMessage(signed, { allowPrivate: true })).status).toBe(204)
      expect((await sendMessage(signed, { allowPrivate: true })).status).toBe(204)
      expect(got).toEqual([['msg_example', JSON.parse(body)]])
      expect((await sendMessage({ ...signed, secret: `whsec_${Buffer.from('another secret of 32 bytes!!!!!!').toString('base64')}` }, { allowPrivate: true })).status).toBe(401)
      expect((await sendMessage({ ...signed, secret: null }, { allowPrivate: true })).status).toBe(401)
      expect(got).toHaveLength(1)
    } finally {
      server.stop(true)
    }
  })

  test('src/hooks/examples/: all four load together and reshape the demo items', async () => {
    const folder = join(ROOT, 'src', 'hooks', 'examples')
    const { registry, files } = await loadExtensions(relative(process.cwd(), folder))
    expect(files).toEqual((await readdir(folder)).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts')).sort())
    const extended = testApp(db.url, demoEnv, registry)
    try {
      const project = (await extended.get('/api/v1/content/project?per_page=1')).body.data[0]
      const anonymous = await extended.get(`/api/v1/content/project/${project.slug}`)
      expect(anonymous.status).toBe(200)
      expect(anonymous.body.data).toMatchObject({ body: expect.stringContaining('<p>'), reading_minutes: 1, fields: { client: expect.any(String), year: expect.any(Number) } })
      expect('excerpt' in anonymous.body.data).toBe(false)
      const member = await extended.get(`/api/v1/content/project/${project.slug}`, { headers: { 'X-Member': 'yes' } })
      expect(member.body.data.excerpt).toEqual(expect.any(String))
    } finally {
      await extended.close()
    }
  })
})
