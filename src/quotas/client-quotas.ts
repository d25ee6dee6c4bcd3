import type { ExtraFields } from '../cache/answer-slot'
import type { Config } from '../config'
import { recordRateLimited } from '../metrics/families'
import { heavyAdmissions, type HeavyAdmission } from '../db/lanes'
import { corsHeaders } from '../http/cors'
import { HttpError } from '../http/errors'
import { JSON_CONTENT_TYPE } from '../http/json-response'
import { logRequest, requestIdOf } from '../http/request-policy'
import type { Logger } from '../log'
import { clientKey } from './client'
import { TokenBuckets, type ClientBuckets, type Policy } from './token-buckets'

/** What the quotas need of the settings. */
export type QuotaSettings = Pick<Config, 'rateLimitRequests' | 'rateLimitHeavy' | 'rateLimitWindowS' | 'trustedProxies' | 'corsOrigins'>

/** Answers a request, as the app does (a kept answer comes back at once). */
export type Answer = (request: Request) => Response | Promise<Response>

/** The cache's answer to a request, made with the headers `decorate` adds; null when it keeps none (src/cache/answer-slot.ts). */
export type KeptAnswer = (request: Request, decorate?: (headers: Headers) => void) => Response | null


/** The 429's message (C52). */
export const TOO_MANY_REQUESTS = 'Too many requests.'

/** Paths a probe calls: never limited (C52). */
const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/healthz/', '/readyz/'])

/** Peer addresses whose client key is kept (a flood of addresses only empties the memo: 64 bytes or so each). */
const PEERS_REMEMBERED = 4096

/** A browser script may read the fields (CORS). */
const EXPOSED_FIELDS = 'RateLimit-Policy, RateLimit'

/**
 * A shared cache may keep a public answer, but never reuse its RateLimit
 * fields for another client without asking us (RFC 9111 §5.2.2.4): every
 * revalidation's 304 carries the asking client's own fields, which replace
 * the kept ones. A cache that does not know the qualified form treats it as
 * plain `no-cache`: it revalidates every reuse, still correct.
 */
const FIELDS_NOT_REUSED = 'no-cache="RateLimit, RateLimit-Policy"'

/**
 * C52: per-client quotas, in front of the cache's slot and the routes. Every
 * request but the probes' costs a unit of `requests` before anything answers
 * it (a cached answer too); a heavy statement (C47) costs a unit of `heavy`
 * right before it would run (src/db/read.ts asks the request's admission),
 * so an answer from the cache never does. Past a quota: 429, no statement,
 * no unit spent. Every other answer gets `RateLimit-Policy` and `RateLimit`:
 * the client's own `RateLimit` is set as it is sent, never kept by the cache;
 * what is the same for every client (the policy, the exposed names, the
 * no-cache qualifier) is part of a kept output's headers. Neither changes
 * the ETag.
 * @example const fetch = quotas ? quotas.guard(answer) : answer
 */
export class ClientQuotas {
  readonly #settings: QuotaSettings
  readonly #log: Logger
  readonly #peerAddress: (request: Request) => string | null
  readonly #buckets: TokenBuckets
  readonly #cors: (request: Request) => Record<string, string>
  readonly #policies: Policy[]
  /** `RateLimit-Policy`, the same on every answer. */
  readonly #policyField: string
  /** Peer address → client key (`#clientOfPeer`). */
  readonly #peerClients = new Map<string, string>()

  /** The quotas of `settings`, or none when both are off (the default). */
  static of(settings: QuotaSettings, log: Logger, peerAddress: (request: Request) => string | null = () => null): ClientQuotas | undefined {
    return settings.rateLimitRequests > 0 || settings.rateLimitHeavy > 0 ? new ClientQuotas(settings, log, peerAddress) : undefined
  }

  constructor(settings: QuotaSettings, log: Logger, peerAddress: (request: Request) => string | null) {
    this.#settings = settings
    this.#log = log
    this.#peerAddress = peerAddress
    this.#buckets = new TokenBuckets({ requests: settings.rateLimitRequests, heavy: settings.rateLimitHeavy }, settings.rateLimitWindowS)
    this.#cors = corsHeaders(settings)
    this.#policies = [...(settings.rateLimitRequests > 0 ? ['requests' as const] : []), ...(settings.rateLimitHeavy > 0 ? ['heavy' as const] : [])]
    this.#policyField = this.#policies.map((policy) => `"${policy}";q=${this.#quotaOf(policy)};w=${settings.rateLimitWindowS}`).join(', ')
  }

  /** Clients remembered now (bounded: src/quotas/token-buckets.ts). */
  get clients(): number {
    return this.#buckets.size
  }

  /**
   * `answer` behind the quotas. `kept`, when given, answers first what the
   * cache keeps (the slot), with the fields added as its response is made: a
   * kept answer runs no statement, so it needs no heavy admission either.
   * @example Bun.serve({ fetch: quotas.guard((request) => app.handle(request), (request, decorate) => slot.answer(request, decorate)) })
   */
  guard(answer: Answer, kept?: KeptAnswer): Answer {
    return (request) => {
      if (UNLIMITED_PATHS.has(pathOf(request.url))) return kept?.(request) ?? answer(request)
      const now = performance.now()
      // X-Forwarded-For is read only where a trusted proxy may have written it.
      const forwardedFor = this.#settings.trustedProxies.length > 0 ? request.headers.get('x-forwarded-for') : null
      const peer = this.#peerAddress(request)
      const client = forwardedFor === null && peer !== null ? this.#clientOfPeer(peer) : clientKey(peer, forwardedFor, this.#settings.trustedProxies)
      const buckets = this.#buckets.of(client, now)
      if (this.#settings.rateLimitRequests > 0 && !this.#buckets.take(buckets, 'requests', now)) {
        recordRateLimited('requests')
        return this.#tooManyRequests(request, buckets, 'requests', now)
      }
      const hit = kept?.(request, (headers) => this.#addFields(headers, buckets, now))
      if (hit) return hit
      const ticket = new RequestTicket(this.#buckets, buckets, this.#settings.rateLimitHeavy > 0)
      ticket.requestCharged = this.#settings.rateLimitRequests > 0
      const answered = ticket.heavyQuota ? heavyAdmissions.run(ticket, () => answer(request)) : answer(request)
      if (answered instanceof Response) return this.#withFields(answered, ticket)
      return answered.then((response) => this.#withFields(response, ticket))
    }
  }

  /** The client of a request that came straight from `peer`: parsed once per address while few are seen. */
  #clientOfPeer(peer: string): string {
    let client = this.#peerClients.get(peer)
    if (client === undefined) {
      if (this.#peerClients.size >= PEERS_REMEMBERED) this.#peerClients.clear()
      client = clientKey(peer, null, this.#settings.trustedProxies)
      this.#peerClients.set(peer, client)
    }
    return client
  }

  /** `RateLimit`: each quota's units left and seconds until full. */
  #rateLimitField(buckets: ClientBuckets, now: number): string {
    let field = ''
    for (const policy of this.#policies) {
      const { remaining, fullInSeconds } = this.#buckets.state(buckets, policy, now)
      field += (field ? ', "' : '"') + policy + '";r=' + remaining + ';t=' + fullInSeconds
    }
    return field
  }

  #quotaOf(policy: Policy): number {
    return policy === 'requests' ? this.#settings.rateLimitRequests : this.#settings.rateLimitHeavy
  }

  /** C52: the fields, added to a response as it is sent. */
  #withFields(response: Response, ticket: RequestTicket): Response {
    ticket.open = false
    if (ticket.refused) recordRateLimited('heavy')
    const now = performance.now()
    try {
      this.#addFields(response.headers, ticket.buckets, now)
      return response
    } catch {
      // A response whose headers cannot change (Response.redirect's): the same, with them.
      const copy = new Response(response.body, response)
      this.#addFields(copy.headers, ticket.buckets, now)
      return copy
    }
  }

  /**
   * What the cache's slot adds to every response it makes (src/cache/answer-slot.ts): the fields that
   * are the same for every client, built once per kept output; `RateLimit` is set per request.
   */
  readonly fieldsOfKept: ExtraFields = {
    same: (headers) => {
      headers['RateLimit-Policy'] = this.#policyField
      const exposed = headers['Access-Control-Expose-Headers']
      if (exposed !== undefined) headers['Access-Control-Expose-Headers'] = `${exposed}, ${EXPOSED_FIELDS}`
    },
    cacheControl: (value) => (value.startsWith('public') && !value.includes('no-cache') ? `${value}, ${FIELDS_NOT_REUSED}` : value),
  }

  /** C52's fields, set on the headers of a response (the RateLimit fields, and the two headers they extend). */
  #addFields(headers: Headers, buckets: ClientBuckets, now: number): void {
    headers.set('RateLimit', this.#rateLimitField(buckets, now))
    // A response of the slot has the rest already (`fieldsOfKept`).
    if (headers.has('RateLimit-Policy')) return
    headers.set('RateLimit-Policy', this.#policyField)
    const exposed = headers.get('access-control-expose-headers')
    if (exposed !== null) headers.set('Access-Control-Expose-Headers', `${exposed}, ${EXPOSED_FIELDS}`)
    const cacheControl = headers.get('cache-control')
    if (cacheControl !== null) headers.set('Cache-Control', this.fieldsOfKept.cacheControl(cacheControl))
  }

  /** C52: past the `requests` quota, before anything else runs. */
  #tooManyRequests(request: Request, buckets: ClientBuckets, policy: Policy, now: number): Response {
    const requestId = requestIdOf(request)
    const headers: Record<string, string> = {
      'X-Request-Id': requestId,
      'X-Content-Type-Options': 'nosniff',
      ...this.#cors(request),
      'Content-Type': JSON_CONTENT_TYPE,
      ...tooManyRequests(this.#buckets.secondsUntilUnit(buckets, policy, now)).headers,
    }
    const fields = new Headers(headers)
    this.#addFields(fields, buckets, now)
    const response = new Response(request.method === 'HEAD' ? null : JSON.stringify({ error: TOO_MANY_REQUESTS }), { status: 429, headers: fields })
    logRequest(this.#log, request, requestId, 429, now)
    return response
  }
}

/**
 * C52's 429 (the RateLimit fields are added as it is sent): never kept by
 * any cache, with the whole seconds until a unit is back.
 * @example throw tooManyRequests(3)
 */
export function tooManyRequests(retryAfterSeconds: number): HttpError {
  return new HttpError(429, TOO_MANY_REQUESTS, { 'Retry-After': String(retryAfterSeconds), 'Cache-Control': 'no-store' })
}

/**
 * One request's part in the quotas: its client's buckets, and the heavy
 * admission that `runRead` asks before a heavy statement. A request costs
 * at most one heavy unit; once answered, its admission admits without
 * charging (work it started and left running is nobody's request).
 */
class RequestTicket implements HeavyAdmission {
  open = true
  requestCharged = false
  heavyTaken = false
  /** The 429 this request got for its heavy statement, if it did. */
  refused: HttpError | null = null

  constructor(
    readonly store: TokenBuckets,
    readonly buckets: ClientBuckets,
    readonly heavyQuota: boolean,
  ) {}

  admit(): void {
    if (this.refused) throw this.refused
    if (!this.open || this.heavyTaken) return
    const now = performance.now()
    if (this.store.take(this.buckets, 'heavy', now)) {
      this.heavyTaken = true
      return
    }
    // C52: the 429 costs no unit, the request's own included.
    if (this.requestCharged) this.store.giveBack(this.buckets, 'requests')
    this.requestCharged = false
    this.refused = tooManyRequests(this.store.secondsUntilUnit(this.buckets, 'heavy', now))
    throw this.refused
  }
}

function pathOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2)
  if (slash === -1) return '/'
  const query = url.indexOf('?', slash)
  return query === -1 ? url.slice(slash) : url.slice(slash, query)
}
