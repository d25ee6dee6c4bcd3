import type { OpenApiDocument } from '../http/openapi-declarations'
import type { QuotaSettings } from './client-quotas'
import { TOO_MANY_REQUESTS } from './client-quotas'

type Json = Record<string, unknown>

/** Paths never limited (C52): their answers carry no fields and no 429. */
const UNLIMITED = new Set(['/healthz', '/readyz'])

const FIELD_NAMES = ['RateLimit-Policy', 'RateLimit'] as const

/**
 * C52 in the OpenAPI document, only while a quota is on: the document
 * describes this deployment (as it does its extensions' fields), so a client
 * generated from it expects a 429 and the fields only where they can come.
 * Every operation but the probes' gets the 429 and the fields on each of its
 * answers. Returns a copy: the document's parts may be shared constants
 * (RESPONSE_HEADERS), which another app in the same process also describes.
 * @example const document = describeQuotas(buildOpenApiDocument(inputs), config)
 */
export function describeQuotas(built: OpenApiDocument, settings: Pick<QuotaSettings, 'rateLimitRequests' | 'rateLimitHeavy' | 'rateLimitWindowS'>): OpenApiDocument {
  if (settings.rateLimitRequests === 0 && settings.rateLimitHeavy === 0) return built
  const document = structuredClone(built)
  const components = document.components as { responses: Record<string, Json>; headers: Record<string, unknown> }
  components.headers['RateLimit-Policy'] = {
    description:
      `The quotas of this service (draft-ietf-httpapi-ratelimit-headers-11), per client: \`"requests"\` (every request) and \`"heavy"\` (searches, deep pages by number, several filters, large sync pages; ` +
      `an answer from the cache costs none), each \`q\` units per \`w\` seconds, refilled evenly. Quotas are per process: see docs/quotas.md (C52).`,
    required: true,
    schema: { type: 'string', examples: [`"requests";q=${settings.rateLimitRequests || 50};w=${settings.rateLimitWindowS}, "heavy";q=${settings.rateLimitHeavy || 5};w=${settings.rateLimitWindowS}`] },
  }
  components.headers.RateLimit = {
    description:
      'What is left of each quota for you after this request: `r` whole units, `t` seconds until the quota is full again (C52). ' +
      'Ignore it on an answer a shared cache gave you without asking the service (a positive `Age` from that cache).',
    required: true,
    schema: { type: 'string', examples: ['"requests";r=49;t=1, "heavy";r=5;t=0'] },
  }
  const fields = Object.fromEntries(FIELD_NAMES.map((name) => [name, { $ref: `#/components/headers/${name}` }]))
  components.responses.TooManyRequests = {
    description: 'A quota of yours is spent (C52): ask again after `Retry-After` seconds. Nothing ran, and this answer cost no unit; it is never cached (`no-store`).',
    headers: Object.fromEntries(['X-Request-Id', 'Vary', 'Retry-After', 'Cache-Control', ...FIELD_NAMES].map((name) => [name, { $ref: `#/components/headers/${name}` }])),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples: { error1: { value: { error: TOO_MANY_REQUESTS } } } } },
  }
  for (const response of Object.values(components.responses)) addHeaders(response, fields)
  for (const [path, item] of Object.entries(document.paths)) {
    if (UNLIMITED.has(path)) continue
    for (const operation of Object.values(item)) {
      const responses = (operation as { responses?: Record<string, Json> }).responses
      if (responses === undefined) continue
      for (const response of Object.values(responses)) if (!('$ref' in response)) addHeaders(response, fields)
      responses['429'] = { $ref: '#/components/responses/TooManyRequests' }
    }
  }
  return document
}

function addHeaders(response: Json, fields: Json): void {
  response.headers = { ...(response.headers as Json | undefined), ...fields }
}
