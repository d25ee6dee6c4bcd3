import http from 'node:http'
import https from 'node:https'
import packageJson from '../../package.json'
import { guardedLookup, literalAddressRefusal } from './address-guard'
import { sign } from './messages'

/** C57: an attempt that has no answer after this long failed. */
export const ATTEMPT_TIMEOUT_MS = 15_000
/** C57: a `Retry-After` is honoured up to this. */
const MAX_RETRY_AFTER_MS = 3_600_000
/** What is read of an answer's body (and then dropped): receivers may say anything. */
const MAX_ANSWER_BYTES = 64 * 1024

const USER_AGENT = `Vitrine/${packageJson.version}`

/**
 * Connections kept open between messages (an endpoint's messages go one after the other): a new TCP (and TLS)
 * connection per message cost the read path of the same process measurably. A kept socket was connected to an
 * address the guard checked; a new one is looked up and checked again.
 */
const AGENTS = { 'http:': new http.Agent({ keepAlive: true, maxSockets: 8, timeout: 60_000 }), 'https:': new https.Agent({ keepAlive: true, maxSockets: 8, timeout: 60_000 }) }

export interface Attempt {
  /** The status answered; undefined when there was none (refused, timed out, reset). */
  status?: number
  /** From `Retry-After` on a 429 or a 503, capped at an hour. */
  retryAfterMs?: number
  /** Why there was no status, in words that never hold the URL. */
  error?: string
}

export interface OutgoingMessage {
  url: string
  secret: string | null
  id: string
  body: string
}

/**
 * One attempt at one message (C57), over node:http with the address guard as
 * its `lookup` (the address connected to is the one checked); redirects are
 * not followed (node:http never does); 15 s at most. Never throws.
 * @example const attempt = await sendMessage({ url, secret, id: 'msg_1', body: '{}' }, { allowPrivate: false })
 */
export function sendMessage(message: OutgoingMessage, options: { allowPrivate: boolean; timeoutMs?: number }): Promise<Attempt> {
  let url: URL
  try {
    url = new URL(message.url)
  } catch {
    return Promise.resolve({ error: 'the URL is not a URL' })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve({ error: 'the URL is not http(s)' })
  const refusal = literalAddressRefusal(url, options.allowPrivate)
  if (refusal) return Promise.resolve({ error: refusal })
  const timestamp = Math.floor(Date.now() / 1000)
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': message.id,
    'webhook-timestamp': String(timestamp),
    'content-length': String(Buffer.byteLength(message.body)),
  }
  if (message.secret) headers['webhook-signature'] = sign(message.secret, message.id, timestamp, message.body)
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS
  return new Promise<Attempt>((resolve) => {
    let settled = false
    const settle = (attempt: Attempt) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(attempt)
    }
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      { method: 'POST', headers, lookup: guardedLookup(options.allowPrivate) as never, agent: AGENTS[url.protocol as 'http:' | 'https:'] },
      (response) => {
        // The status line decides: a 2xx whose body is slow is delivered, not retried (and sent twice).
        settle({ status: response.statusCode, retryAfterMs: retryAfter(response.statusCode, response.headers['retry-after']) })
        let read = 0
        response.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > MAX_ANSWER_BYTES) response.destroy()
        })
        response.on('error', () => {})
        // What is left of the body is read and dropped, for at most the attempt's time.
        setTimeout(() => response.destroy(), timeoutMs).unref()
      },
    )
    const timer = setTimeout(() => {
      settle({ error: `no answer within ${timeoutMs} ms` })
      request.destroy()
    }, timeoutMs)
    request.on('error', (error: NodeJS.ErrnoException) => settle({ error: describe(error) }))
    request.end(message.body)
  })
}

/** A connection's failure in words (a host's name may show; its path, query and credentials never do). */
function describe(error: NodeJS.ErrnoException): string {
  if (error.code === 'VITRINE_WEBHOOK_ADDRESS_REFUSED') return error.message
  return error.code ? `${error.code}` : 'the connection failed'
}

/** `Retry-After` (seconds, or an HTTP date) of a 429 or a 503, in milliseconds, capped at an hour. */
function retryAfter(status: number | undefined, header: string | undefined): number | undefined {
  if ((status !== 429 && status !== 503) || !header) return undefined
  // Whole seconds or an HTTP date (RFC 9110); anything else (1.5, -1) is not a Retry-After: the schedule decides.
  const text = header.trim()
  const ms = /^\d{1,10}$/.test(text) ? Number(text) * 1000 : /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text) ? Date.parse(text) - Date.now() : NaN
  if (!Number.isFinite(ms)) return undefined
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms))
}

/**
 * A URL as logs and metrics may show it (C57): its scheme, host and port, never its path, query or credentials
 * (a build hook's URL is its secret).
 * @example safeUrl('https://api.netlify.com/build_hooks/5f3a?x=1') // 'https://api.netlify.com/…'
 */
export function safeUrl(text: string): string {
  try {
    const url = new URL(text)
    return `${url.protocol}//${url.host}/…`
  } catch {
    return '(not a URL)'
  }
}
