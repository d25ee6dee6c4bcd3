import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { listenForChanges, type ChangeListener } from '../src/cache/change-listener'
import { loadConfig } from '../src/config'
import { createLogger } from '../src/log'
import { isRefusedAddress } from '../src/webhooks/address-guard'
import { sendMessage } from '../src/webhooks/send'
import { retryDelayMs, startWebhookDelivery } from '../src/webhooks/webhook-delivery'
import { createTestDatabase } from './support/database'
import { addContentType } from './support/fixtures'
import { runScript, startService, type RunningService } from './support/service'
import { fetchOpenApiText } from './support/openapi'
import { documentChecker } from './support/openapi-validation'
import { waitFor } from './support/wait'
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver'

/**
 * C57 over real HTTP: a delivery wired as main.ts wires it (its own bid for the
 * webhook duty, its own read-write connection, the change listener), writers
 * writing with SQL, and local receivers that verify every message with the
 * `standardwebhooks` package.
 */
const db = await createTestDatabase()
const sql = db.sql
const log = createLogger(process.env.WEBHOOK_TEST_LOG ? 'debug' : 'silent')
const PUBLIC_URL = 'https://cms.example.com'
let postId = 0
let pageId = 0
postId = await addContentType(sql, 'post')
pageId = await addContentType(sql, 'page')

interface Running {
  stop(): Promise<void>
}
const running: Running[] = []
const receivers: WebhookReceiver[] = []

function secret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

function receiver(key: string | null = null): WebhookReceiver {
  const started = startWebhookReceiver(key)
  receivers.push(started)
  return started
}

/** A delivery as main.ts starts it: the duty, the connection, the listener. */
function startDelivery(env: Record<string, string> = {}): Running {
  const settings = loadConfig({ PUBLIC_URL, WEBHOOK_ALLOW_PRIVATE: 'true', ...env })
  const webhooks = startWebhookDelivery({ primaryUrl: db.url, settings, log })
  const listener: ChangeListener = listenForChanges(db.url, webhooks.delivery, { timeoutMs: 5000, log })
  const started = {
    async stop() {
      await webhooks.stop()
      await listener.stop()
    },
  }
  running.push(started)
  return started
}

async function addWebhook(url: string, fields: { secret?: string | null; types?: string[] | null; debounceMs?: number } = {}): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into webhooks (url, secret, types, debounce_ms) values (${url}, ${fields.secret ?? null}, ${fields.types ? `{${fields.types.join(",")}}` : null}::text[], ${fields.debounceMs ?? 0})
    returning id::float8 as id
  `
  return row!.id
}

/** One entry and its translation in one transaction (one change). */
async function publish(slug: string, options: { type?: number; publishedAt?: Date; status?: string } = {}): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: number }[]>`
      insert into entries (content_type_id, status, published_at, created_at)
      values (${options.type ?? postId}, ${options.status ?? 'published'}, ${options.publishedAt ?? new Date(Date.now() - 60_000)}, now())
      returning id::float8 as id
    `
    await tx`insert into entry_translations (entry_id, language_code, title, slug) values (${row!.id}, 'en', ${slug}, ${slug})`
    return row!.id
  })
}

/** Waits until the delivery stands at the end of the change log: it has read every change committed before. */
async function settled(): Promise<void> {
  const [{ position }] = await sql<{ position: string }[]>`select coalesce(max(position), 0)::text as position from change_log`
  await waitFor('the webhook reader to reach the end of the change log', async () => {
    const [row] = await sql<{ position: string | null }[]>`select position::text from webhook_reader`
    return row !== undefined && BigInt(row.position ?? 0) >= BigInt(position)
  }, 15_000)
}

async function pending(): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`select count(*)::int as count from webhook_deliveries`
  return count
}

const checkDocument = documentChecker(JSON.parse(await fetchOpenApiText()))

afterEach(async () => {
  for (const each of running.splice(0)) await each.stop()
  // Every message any test received is what the OpenAPI document's `webhooks` describe (but the CLI's test message).
  const received = receivers.flatMap((each) => each.received).filter((each) => each.message.type !== 'webhook.test' && each.message.type !== undefined)
  expect(received.flatMap((each) => checkDocument.webhook(each.message.type, each.message))).toEqual([])
  for (const each of receivers.splice(0)) each.stop()
  await sql`delete from webhooks`
  await sql`delete from webhook_reader`
})

afterAll(async () => {
  await sql.end()
})

describe('C57: messages', () => {
  test('a published, an updated and an unpublished entry: one message each, in order, signed and verified by the standardwebhooks package', async () => {
    const key = secret()
    const at = receiver(key)
    startDelivery()
    await addWebhook(at.url, { secret: key })
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    // Each write waits for its message: writes read together are told once per entry, by what it became.
    const id = await publish('hello')
    await waitFor('the first message', () => at.delivered().length === 1)
    await sql`update entry_translations set title = 'Hello again' where entry_id = ${id}`
    await waitFor('the second message', () => at.delivered().length === 2)
    await sql`update entries set status = 'draft' where id = ${id}`
    await waitFor('three messages', () => at.delivered().length === 3)
    expect(at.rejected).toEqual([])
    const [published, updated, unpublished] = at.delivered()
    expect(published!.message).toEqual({ type: 'entry.published', timestamp: expect.any(String), data: { id, type: 'post', urls: { en: `${PUBLIC_URL}/api/v1/content/post/hello?lang=en` } } })
    expect(updated!.message).toMatchObject({ type: 'entry.updated', data: { id, type: 'post', urls: { en: `${PUBLIC_URL}/api/v1/content/post/hello?lang=en` } } })
    expect(unpublished!.message).toEqual({ type: 'entry.unpublished', timestamp: expect.any(String), data: { id, type: 'post', urls: {} } })
    expect(new Set(at.delivered().map((each) => each.id)).size).toBe(3)
    expect(published!.headers['user-agent']).toMatch(/^Vitrine\/\d/)
    expect(published!.headers['content-type']).toBe('application/json')
    expect(Math.abs(Number(published!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30)
    expect(published!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    // The receiver has the message before the delivery has its answer and removes it from the pending ones.
    await waitFor('nothing pending', async () => (await pending()) === 0)
  })

  test('an unsigned endpoint gets no signature; a draft never heard of is never told (C2); an endpoint of pages hears nothing of posts', async () => {
    const all = receiver()
    const pages = receiver()
    startDelivery()
    await addWebhook(all.url)
    await addWebhook(pages.url, { types: ['page'] })
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const draft = await publish('draft', { status: 'draft' })
    await sql`update entry_translations set title = 'Still a draft' where entry_id = ${draft}`
    const post = await publish('a-post')
    const page = await publish('a-page', { type: pageId })
    await waitFor('two messages', () => all.delivered().length === 2)
    await waitFor('one message', () => pages.delivered().length === 1)
    await settled()
    await Bun.sleep(300)
    expect(all.delivered().map((each) => [each.message.type, each.message.data.id])).toEqual([['entry.published', post], ['entry.published', page]])
    expect(pages.delivered().map((each) => each.message.data)).toEqual([{ id: page, type: 'page', urls: { en: `${PUBLIC_URL}/api/v1/content/page/a-page?lang=en` } }])
    expect(all.delivered()[0]!.headers['webhook-signature']).toBeUndefined()
  })

  test('a go-live with no write is told within a second of its time, and an embargoed entry is not told before', async () => {
    const at = receiver()
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const goLive = new Date(Date.now() + 1500)
    const id = await publish('embargoed', { publishedAt: goLive })
    await settled()
    expect(at.received).toEqual([])
    await waitFor('the go-live', () => at.delivered().length === 1, 5000)
    const told = at.delivered()[0]!
    expect(told.message).toMatchObject({ type: 'entry.published', data: { id, type: 'post' } })
    expect(Date.now() - goLive.getTime()).toBeLessThan(1000 + 500)
    expect(told.message.timestamp).toBe(goLive.toISOString())
  })

  test('a bulk write of 2 000 entries to a debounced endpoint is one content.changed message, its ids capped at 1 000 a list', async () => {
    const at = receiver()
    startDelivery()
    await addWebhook(at.url, { debounceMs: 500 })
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const before = await publish('before')
    await sql`
      insert into entries (content_type_id, status, published_at, created_at)
      select ${postId}, 'published', now() - interval '1 minute', now() from generate_series(1, 2000)
    `
    await sql`update entry_translations set title = 'Edited' where entry_id = ${before}`
    await waitFor('one message', () => at.delivered().length === 1, 10_000)
    await Bun.sleep(1000)
    expect(at.delivered()).toHaveLength(1)
    const { message } = at.delivered()[0]!
    expect(message.type).toBe('content.changed')
    expect(message.data.types).toEqual(['post'])
    expect(message.data.published).toHaveLength(1000)
    expect(message.data.published[0]).toBe(before)
    expect(message.data.updated).toEqual([])
    expect(message.data.truncated).toBe(true)
  })

  test('a quiet debounced endpoint is told once, after the window; changes apart by more than the window are two messages', async () => {
    const at = receiver()
    startDelivery()
    await addWebhook(at.url, { debounceMs: 300, types: ['post'] })
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const first = await publish('one')
    await sql`update entry_translations set title = 'One, edited' where entry_id = ${first}`
    await waitFor('one message', () => at.delivered().length === 1, 5000)
    expect(at.delivered()[0]!.message.data).toEqual({ types: ['post'], published: [first], updated: [], unpublished: [] })
    await sql`update entries set status = 'draft' where id = ${first}`
    await waitFor('a second message', () => at.delivered().length === 2, 5000)
    expect(at.delivered()[1]!.message.data).toEqual({ types: ['post'], published: [], updated: [], unpublished: [first] })
  })
})

  test('an entry moved from posts to pages: unpublished in post, published in page; each endpoint hears its side', async () => {
    const all = receiver()
    const posts = receiver()
    const pages = receiver()
    startDelivery()
    await addWebhook(all.url)
    await addWebhook(posts.url, { types: ['post'] })
    await addWebhook(pages.url, { types: ['page'] })
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const id = await publish('moving')
    await waitFor('the publication', () => posts.delivered().length === 1)
    for (let round = 0; round < 3; round++) {
      const [from, to] = round % 2 === 0 ? [postId, pageId] : [pageId, postId]
      const [fromSlug, toSlug] = round % 2 === 0 ? ['post', 'page'] : ['page', 'post']
      const before = all.delivered().length
      await sql`update entries set content_type_id = ${to} where id = ${id} and content_type_id = ${from}`
      await waitFor('the move', () => all.delivered().length === before + 2)
      expect(all.delivered().slice(before).map((each) => [each.message.type, each.message.data.type, Object.keys(each.message.data.urls)])).toEqual([
        ['entry.unpublished', fromSlug, []],
        ['entry.published', toSlug, ['en']],
      ])
    }
    await settled()
    await Bun.sleep(300)
    expect(posts.delivered().map((each) => each.message.type)).toEqual(['entry.published', 'entry.unpublished', 'entry.published', 'entry.unpublished'])
    expect(pages.delivered().map((each) => each.message.type)).toEqual(['entry.published', 'entry.unpublished', 'entry.published'])
    // Moved and deleted in one read: it was live, it is told gone, in the type it was in.
    const before = all.delivered().length
    await sql.begin(async (tx) => {
      await tx`update entries set content_type_id = ${postId} where id = ${id}`
      await tx`delete from entries where id = ${id}`
    })
    await waitFor('the removal', () => all.delivered().length === before + 1)
    expect(all.delivered()[before]!.message).toMatchObject({ type: 'entry.unpublished', data: { id, type: 'page', urls: {} } })
  })

  test('a debounce of 24 days beside another endpoint: both are told (its window is computed in 64 bits); a debounce set to 0 sends what it had gathered', async () => {
    const long = receiver()
    const plain = receiver()
    startDelivery()
    const longId = await addWebhook(long.url, { debounceMs: 2_000_000_000 })
    await addWebhook(plain.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const id = await publish('long-window')
    await waitFor('the plain message', () => plain.delivered().length === 1)
    await waitFor('the gathered window', async () => (await sql`select 1 from webhook_positions where webhook_id = ${longId} and gathered is not null`).length === 1)
    expect(long.received).toEqual([])
    await sql`update webhooks set debounce_ms = 0 where id = ${longId}`
    await waitFor('what it gathered', () => long.delivered().length === 1, 10_000)
    expect(long.delivered()[0]!.message).toMatchObject({ type: 'content.changed', data: { types: ['post'], published: [id] } })
  }, 20_000)

describe('C57: delivery', () => {
  test('a 500 is retried after about 5 s with the same id and the same body; the next message waits for it', async () => {
    const at = receiver()
    let failures = 1
    at.answer = () => (failures-- > 0 ? 500 : 204)
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const first = await publish('first')
    await waitFor('the first attempt', () => at.received.length === 1)
    const second = await publish('second')
    await settled()
    await Bun.sleep(500)
    // In order: the second waits for the first.
    expect(at.received).toHaveLength(1)
    await waitFor('the retry and the next', () => at.delivered().length === 2, 10_000)
    const [failed, retried, next] = at.received
    expect(retried!.id).toBe(failed!.id)
    expect(retried!.message).toEqual(failed!.message)
    expect(retried!.at - failed!.at).toBeGreaterThan(4500)
    expect(retried!.at - failed!.at).toBeLessThan(7000)
    expect([failed!.message.data.id, next!.message.data.id]).toEqual([first, second])
  }, 30_000)

  test('410 disables the endpoint and drops what it had pending, until its row is updated; then it resumes from there', async () => {
    const at = receiver()
    at.answer = () => 410
    startDelivery()
    const id = await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await publish('gone-1')
    await publish('gone-2')
    await waitFor('the 410', () => at.received.length === 1)
    await settled()
    await publish('while-gone')
    await settled()
    await Bun.sleep(300)
    expect(at.received).toHaveLength(1)
    expect(await pending()).toBe(0)
    at.answer = () => 204
    await sql`update webhooks set enabled = true where id = ${id}`
    const after = await publish('after')
    await waitFor('the message after', () => at.delivered().length === 1)
    expect(at.delivered()[0]!.message.data.id).toBe(after)
  })

  test('a redirect is not followed: it is a failure, retried', async () => {
    const target = receiver()
    const at = receiver()
    at.answer = () => new Response(null, { status: 307, headers: { location: target.url } })
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await publish('redirected')
    await waitFor('the attempt', () => at.received.length === 1)
    await waitFor('its failure recorded', async () => (await sql`select 1 from webhook_deliveries where last_outcome = 'status 307'`).length === 1)
    expect(target.received).toEqual([])
  })

  test('without WEBHOOK_ALLOW_PRIVATE, a loopback address is refused, by address and by a name that resolves to it; nothing reaches the receiver', async () => {
    const at = receiver()
    startDelivery({ WEBHOOK_ALLOW_PRIVATE: 'false' })
    await addWebhook(at.url)
    await addWebhook(`http://localhost:${at.port}/hook`)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await publish('private')
    await waitFor('both refused', async () => (await sql`select 1 from webhook_deliveries where last_outcome like '%webhooks may not reach%'`).length === 2)
    expect(at.received).toEqual([])
    const outcomes = await sql<{ last_outcome: string }[]>`select last_outcome from webhook_deliveries order by webhook_id`
    expect(outcomes.map((each) => each.last_outcome)).toEqual([expect.stringContaining('127.0.0.1'), expect.stringContaining('localhost resolves to')])
  })

  test('the address guard refuses every private, loopback, link-local, CGNAT and unspecified address, IPv4-mapped ones too, and lets public ones through', async () => {
    // The IPv6 forms a gateway translates to IPv4 (NAT64, 6to4, Teredo, SIIT, IPv4-compatible) are refused whole.
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fc00::1', 'fd12::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '64:ff9b::7f00:1', '2002:7f00:1::', '::ffff:0:127.0.0.1', '::127.0.0.1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']) {
      expect([address, isRefusedAddress(address)]).toEqual([address, true])
    }
    for (const address of ['93.184.216.34', '1.1.1.1', '::ffff:93.184.216.34', '2606:4700:4700::1111', '172.32.0.1', '100.128.0.1']) {
      expect([address, isRefusedAddress(address)]).toEqual([address, false])
    }
    const at = receiver()
    expect((await sendMessage({ url: `http://[::1]:${at.port}/`, secret: null, id: 'msg_1', body: '{}' }, { allowPrivate: false })).error).toContain('::1')
    expect((await sendMessage({ url: `http://localhost:${at.port}/`, secret: null, id: 'msg_1', body: '{}' }, { allowPrivate: false })).error).toContain('localhost resolves to')
    expect((await sendMessage({ url: at.url, secret: null, id: 'msg_1', body: '{}' }, { allowPrivate: true })).status).toBe(204)
    expect(at.received).toHaveLength(1)
  })

  test("the retry schedule: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h ± 10%", () => {
    expect([0, 1, 2, 3, 4, 5].map(retryDelayMs)).toEqual([5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000])
    for (let attempts = 6; attempts < 40; attempts++) {
      const delay = retryDelayMs(attempts)
      expect(delay).toBeGreaterThanOrEqual(7_200_000 * 0.9)
      expect(delay).toBeLessThanOrEqual(7_200_000 * 1.1)
    }
  })

  test('its database connections killed (pg_terminate_backend, both the duty\'s and the delivery\'s) while writes go on: it takes the duty again and every message arrives, in order', async () => {
    const at = receiver()
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    const ids: number[] = [await publish('before-kill')]
    await waitFor('the first message', () => at.delivered().length === 1)
    const killed = await sql<{ name: string }[]>`
      select application_name as name, pg_terminate_backend(pid) from pg_stat_activity
      where application_name in ('vitrine-webhooks', 'vitrine-webhook-duty') and datname = current_database()
    `
    // Both of its connections (an earlier test's delivery may still be closing one of its own).
    expect([...new Set(killed.map((row) => row.name))].sort()).toEqual(['vitrine-webhook-duty', 'vitrine-webhooks'])
    for (let index = 0; index < 5; index++) ids.push(await publish(`after-kill-${index}`))
    await waitFor('every message after the kill', () => new Set(at.delivered().map((each) => each.message.data.id)).size === ids.length, 20_000)
    const told = at.delivered().map((each) => each.message.data.id as number)
    // In order; the message in flight at the kill may come twice, nothing else.
    expect(told.filter((id, index) => told.indexOf(id) === index)).toEqual(ids)
    expect(told.length - ids.length).toBeLessThanOrEqual(1)
  }, 30_000)

  test('Retry-After: 0 is not a loop: the next attempt waits a second at least', async () => {
    const at = receiver()
    let refusals = 2
    at.answer = () => (refusals-- > 0 ? new Response(null, { status: 503, headers: { 'retry-after': '0' } }) : 204)
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await publish('retry-after-zero')
    await waitFor('the delivery', () => at.delivered().length === 1, 6000)
    expect(at.received).toHaveLength(3)
    expect(at.received[1]!.at - at.received[0]!.at).toBeGreaterThan(900)
    expect(at.received[2]!.at - at.received[1]!.at).toBeGreaterThan(900)
  }, 20_000)

  test('an endpoint disabled while its queue is being sent is told nothing more (the message in flight aside)', async () => {
    const at = receiver()
    at.answer = () => {
      Bun.sleepSync(100)
      return 204
    }
    startDelivery()
    const id = await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await sql.begin(async (tx) => {
      for (let index = 0; index < 10; index++) {
        const [row] = await tx<{ id: number }[]>`insert into entries (content_type_id, status, published_at) values (${postId}, 'published', now() - interval '1 minute') returning id::float8 as id`
        await tx`insert into entry_translations (entry_id, language_code, title, slug) values (${row!.id}, 'en', 'Queued', ${`queued-${index}`})`
      }
    })
    await waitFor('the first message', () => at.received.length >= 1)
    await sql`update webhooks set enabled = false where id = ${id}`
    const seen = at.received.length
    await Bun.sleep(1500)
    expect(at.received.length).toBeLessThanOrEqual(seen + 1)
    expect(at.received.length).toBeLessThan(10)
  })

  test('Retry-After of a 503 is honoured', async () => {
    const at = receiver()
    let first = true
    at.answer = () => {
      if (!first) return 204
      first = false
      return new Response(null, { status: 503, headers: { 'retry-after': '1' } })
    }
    startDelivery()
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1)
    await publish('busy')
    await waitFor('the retry', () => at.delivered().length === 1, 4000)
    const [refused, retried] = at.received
    expect(retried!.at - refused!.at).toBeGreaterThan(900)
    expect(retried!.at - refused!.at).toBeLessThan(3000)
  }, 30_000)
})

describe('C57: nothing lost, nothing twice', () => {
  const services: RunningService[] = []
  const serviceEnv = { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', PUBLIC_URL, WEBHOOK_ALLOW_PRIVATE: 'true' }
  afterEach(async () => {
    for (const service of services.splice(0)) if (service.process.exitCode === null) await service.stop('SIGKILL')
  })

  test('the receiver down, the delivering instance killed, writes and a go-live while nothing runs: after the restart every message arrives, in order, once', async () => {
    const at = receiver()
    const first = await startService(serviceEnv, { direct: true })
    services.push(first)
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1, 15_000)
    const one = await publish('crash-1')
    await waitFor('the first message', () => at.delivered().length === 1)
    at.stop()
    const two = await publish('crash-2')
    await waitFor('a failed attempt', async () => (await sql`select 1 from webhook_deliveries where attempts > 0`).length === 1)
    const goLive = new Date(Date.now() + 1000)
    const four = await publish('crash-4', { publishedAt: goLive })
    await settled()
    // A crash: no graceful stop, the duty's session cut by the kernel.
    await first.stop('SIGKILL')
    const three = await publish('crash-3')
    await sql`update entry_translations set title = 'Edited while down' where entry_id = ${one}`
    await Bun.sleep(Math.max(0, goLive.getTime() - Date.now()) + 200)
    at.restart()
    services.push(await startService(serviceEnv, { direct: true }))
    await waitFor('every message', () => at.delivered().length === 5, 20_000)
    await Bun.sleep(500)
    const told = at.delivered().map((each) => [each.message.type, each.message.data.id])
    expect(told).toEqual([
      ['entry.published', one],
      ['entry.published', two],
      ['entry.published', three],
      ['entry.updated', one],
      ['entry.published', four],
    ])
    expect(new Set(at.received.map((each) => each.id)).size).toBe(5)
    await waitFor('nothing pending', async () => (await pending()) === 0)
  }, 60_000)

  test('two instances on one database deliver each message once; when one stops, the other takes over within seconds', async () => {
    const at = receiver()
    const instances = [await startService(serviceEnv), await startService(serviceEnv)]
    services.push(...instances)
    await addWebhook(at.url)
    await waitFor('the reader to start', async () => (await sql`select 1 from webhook_reader`).length === 1, 15_000)
    const ids: number[] = []
    for (let index = 0; index < 20; index++) ids.push(await publish(`twice-${index}`))
    await waitFor('20 messages', () => at.delivered().length === 20, 15_000)
    for (const instance of instances) {
      await instance.stop()
      const more: number[] = []
      if (instance === instances[1]) break
      for (let index = 0; index < 5; index++) more.push(await publish(`after-${index}`))
      ids.push(...more)
      await waitFor('the messages after the stop', () => at.delivered().length === ids.length, 15_000)
    }
    await Bun.sleep(500)
    expect(at.delivered().map((each) => each.message.data.id)).toEqual(ids)
    expect(new Set(at.received.map((each) => each.id)).size).toBe(at.received.length)
  }, 60_000)

  test('bun run webhooks: add (with a secret, types and a debounce), list, test (verified by the receiver), remove; bad input says why and writes nothing', async () => {
    const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'true' }
    const added = await runScript('webhooks', env, ['add', 'http://127.0.0.1:9/hook/secret-path', '--types', 'post,page', '--debounce', '10s', '--secret'])
    expect([added.code, added.stderr]).toEqual([0, ""])
    const id = /Added webhook (\d+)/.exec(added.stdout)![1]!
    const key = /(whsec_[A-Za-z0-9+/=]+)/.exec(added.stdout)![1]!
    const [row] = await sql<{ types: string; debounce_ms: number; secret: string }[]>`select types::text, debounce_ms, secret from webhooks where id = ${id}`
    expect(row).toEqual({ types: '{post,page}', debounce_ms: 10_000, secret: key })
    const listed = await runScript('webhooks', env, ['list'])
    expect(listed.stdout).toContain(`${id}\thttp://127.0.0.1:9/hook/secret-path\tenabled\ttypes post,page, debounce 10000 ms, signed\t0 pending`)
    const at = receiver(key)
    await sql`update webhooks set url = ${at.url} where id = ${id}`
    const tried = await runScript('webhooks', env, ['test', id])
    expect([tried.code, tried.stdout.trim()]).toEqual([0, `Webhook ${id} answered 204.`])
    expect(at.rejected).toEqual([])
    expect(at.delivered().map((each) => each.message)).toEqual([{ type: 'webhook.test', timestamp: expect.any(String), data: { webhook: Number(id) } }])
    const refused = await runScript('webhooks', { DATABASE_URL: db.url }, ['test', id])
    expect([refused.code, refused.stdout.trim()]).toEqual([1, `Webhook ${id} failed: the address 127.0.0.1 is one webhooks may not reach (WEBHOOK_ALLOW_PRIVATE=true allows it).`])
    const removed = await runScript('webhooks', env, ['remove', id])
    expect(removed.stdout.trim()).toBe(`Removed webhook ${id}.`)
    expect(await sql`select 1 from webhooks`).toHaveLength(0)
    for (const [args, message] of [
      [['add', 'ftp://example.com/'], "A webhook's URL is http(s): ftp:."],
      [['add', 'https://example.com/', '--debounce', 'soon'], '--debounce takes a duration: 500ms, 10s, 2m (not soon).'],
      [['remove', 'x'], "A webhook's id is a number: x."],
      [['remove', '424242'], 'There is no webhook 424242.'],
      [['frobnicate'], 'Not a webhooks command: frobnicate.'],
    ] as const) {
      const result = await runScript('webhooks', env, [...args])
      expect([result.code, result.stderr.split('\n')[0]]).toEqual([2, message])
    }
    expect(await sql`select 1 from webhooks`).toHaveLength(0)
  }, 60_000)
})
