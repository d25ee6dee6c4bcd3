/*
 * Header names we send are written Title-Case, as the RFCs and the contract
 * spell them (`Cache-Control`, `ETag`, `X-Request-Id`, `Surrogate-Key`,
 * `Access-Control-Allow-Origin`), wherever a response's headers are put
 * together: these names, a `Response`'s headers, the framework's
 * `set.headers`, an HttpError's. Bun sends a name as written (it spells only
 * the ones it knows itself), so one spelling in the code is one on the wire.
 * In `set.headers`, a plain record, two spellings of a name would be sent as
 * two headers: that is why every answer there is a `Response` (the framework
 * adds its own lower-case `content-type` to a plain object's). Names we read,
 * `request.headers.get('if-none-match')`, are case-insensitive and written
 * lower-case.
 */

/** The methods every API path answers (C3): a 405's `Allow`, and what CORS allows. */
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS'

/** A response header as the OpenAPI document describes it (an OpenAPI Header Object). */
export interface ResponseHeader {
  description: string
  /** Sent on every response that lists it. */
  required: boolean
  schema: Record<string, unknown>
}

/**
 * The response headers of the service, each defined once from the contract.
 * The OpenAPI document lists them on the responses that carry them; code that
 * sends one takes its name from here. ETag, Cache-Control, Surrogate-Key,
 * X-Cache and Age belong to the response cache (C32–C34); only Age is not on
 * every answer that lists it (hits only).
 * @example response.headers.get('X-Request-Id' satisfies ResponseHeaderName)
 */
export const RESPONSE_HEADERS = {
  'X-Request-Id': {
    description: 'Finds the request in the logs: the incoming `X-Request-Id` when it is 1 to 128 letters, digits or `._:-`, else a generated UUID (C29).',
    required: true,
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  Vary: {
    description:
      'The request headers this answer depends on: `Origin` when `CORS_ORIGINS` is a list, and every request header an extension read (C30). Absent when it depends on none.',
    required: false,
    schema: { type: 'string', examples: ['Origin, x-member'] },
  },
  'Retry-After': {
    description: 'Seconds to wait before asking again (C22).',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  Allow: {
    description: 'The methods this path answers (C3).',
    required: true,
    schema: { type: 'string', const: ALLOWED_METHODS },
  },
  ETag: {
    description: 'A strong entity tag of the exact body bytes, the same on every instance; send it back in `If-None-Match` to get a 304 (C32).',
    required: true,
    schema: { type: 'string', examples: ['"5d41402abc4b2a76"'] },
  },
  'Cache-Control': {
    description:
      '200 and 404: `public, no-cache`, or `public, max-age=N` when `CACHE_MAX_AGE` is set, capped at the next go-live of the type. 400 and 405: `public, max-age=N`. 5xx: `no-store` (C33).',
    required: true,
    schema: { type: 'string', examples: ['public, no-cache'] },
  },
  'Surrogate-Key': {
    description:
      'Space-separated tags for purging a CDN: `type-{slug}`, and `entry-{id}` for each item (C34); `lists-{slug}` on the answers that depend on which entries of the type are live (lists, totals, 404s), and `vitrine` on every answer (C51).',
    required: true,
    schema: { type: 'string', examples: ['type-post lists-post entry-42 entry-41 vitrine'] },
  },
  'X-Cache': {
    description: "Whether the service's own cache answered (C34).",
    required: true,
    schema: { type: 'string', enum: ['HIT', 'MISS', 'BYPASS'] },
  },
  Link: {
    description:
      'RFC 8288 links of a list page (C39): `next` continues right after its last entry with an opaque `after` cursor (only when more live entries follow), ' +
      '`prev` is the page before by number (pages asked by number only), `first` and `last` are pages by number. The URLs keep `lang` and `per_page`.',
    required: true,
    schema: { type: 'string', examples: ['<https://cms.example.com/api/v1/content/post?after=WzIsIjE3NjczMDA2MDAwMDAwMDAiLDQyXQ>; rel="next", <https://cms.example.com/api/v1/content/post>; rel="first", <https://cms.example.com/api/v1/content/post?page=9>; rel="last"'] },
  },
  Age: {
    description: "Seconds the answer spent in the service's cache; sent on hits (C34).",
    required: false,
    schema: { type: 'integer', minimum: 0 },
  },
  'Access-Control-Allow-Origin': {
    description: '`*`, or the request\'s `Origin` when `CORS_ORIGINS` lists it (then absent for any other origin) (C29).',
    required: false,
    schema: { type: 'string', examples: ['*'] },
  },
  'Access-Control-Allow-Methods': {
    description: 'A preflight answer: the methods a browser may send (C29).',
    required: true,
    schema: { type: 'string', const: ALLOWED_METHODS },
  },
  'Access-Control-Allow-Headers': {
    description: 'A preflight answer: the request headers it asked for in `Access-Control-Request-Headers`, when it asked for any (C29).',
    required: false,
    schema: { type: 'string', examples: ['x-member, if-none-match'] },
  },
  'Access-Control-Max-Age': {
    description: 'A preflight answer: seconds a browser may reuse it.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  Location: {
    description: 'Where the resource is: `/docs`.',
    required: true,
    schema: { type: 'string', const: '/docs' },
  },
} as const satisfies Record<string, ResponseHeader>

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS
