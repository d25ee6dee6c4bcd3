import { MAX_IDS_PER_LIST } from './messages'
import type { OpenApiDeclaration } from '../http/openapi-declarations'

const HEADERS = [
  { name: 'webhook-id', in: 'header', required: true, description: 'The message\'s id, the same on every attempt: deduplicate by it.', schema: { type: 'string', examples: ['msg_2b7c4c1f0e8a4d1c9f3e5a6b7c8d9e0f'] } },
  { name: 'webhook-timestamp', in: 'header', required: true, description: 'When this attempt was signed, in seconds since 1970: refuse old ones (Standard Webhooks: 5 minutes).', schema: { type: 'string', pattern: '^\\d+$' } },
  {
    name: 'webhook-signature',
    in: 'header',
    required: false,
    description: 'With a secret: `v1,` and the base64 HMAC-SHA256, keyed by the secret\'s bytes (after `whsec_`), of `<webhook-id>.<webhook-timestamp>.<body>`. Verify it with a Standard Webhooks library.',
    schema: { type: 'string', pattern: '^v1,' },
  },
]

const RESPONSES = {
  '2XX': { description: 'Delivered. Anything else is retried with the same `webhook-id` (after 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 2 h, for 24 hours; `Retry-After` of a 429 or a 503 honoured, up to an hour); redirects are not followed.' },
  '410': { description: 'Gone: the endpoint is disabled until its row in `webhooks` is updated.' },
}

const message = (operationId: string, summary: string, description: string, schema: string) => ({
  post: {
    operationId,
    summary,
    description,
    tags: ['webhooks'],
    parameters: HEADERS,
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } },
    responses: RESPONSES,
  },
})

const entryMessage = (kind: string, description: string) => ({
  type: 'object',
  additionalProperties: false,
  required: ['type', 'timestamp', 'data'],
  description,
  properties: {
    type: { const: `entry.${kind}` },
    timestamp: { type: 'string', format: 'date-time', description: 'When it happened: the write\'s transaction began, or the entry\'s publication time came.' },
    data: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'type', 'urls'],
      properties: {
        id: { type: 'integer' },
        type: { type: 'string', description: 'The content type\'s slug: where it is live now, or, unpublished, where it was.' },
        urls: {
          type: 'object',
          additionalProperties: { type: 'string', format: 'uri' },
          description: kind === 'unpublished' ? 'Empty.' : 'Each language it has a translation in, with its single-entry URL.',
          examples: [{ en: 'https://cms.example.com/api/v1/content/post/hello-world?lang=en' }],
        },
      },
    },
  },
})

const ids = { type: 'array', items: { type: 'integer' }, maxItems: MAX_IDS_PER_LIST }

/**
 * The messages of C57 under OpenAPI 3.1's top-level `webhooks`: what an
 * endpoint in the `webhooks` table receives, with the Standard Webhooks headers.
 * @example webhooksOpenApi().webhooks!['entry.published']
 */
export function webhooksOpenApi(): OpenApiDeclaration {
  return {
    paths: {},
    schemas: {
      WebhookEntryPublished: entryMessage('published', 'An entry became live: written so, or its publication time came (within a second of it).'),
      WebhookEntryUpdated: entryMessage('updated', 'A live entry\'s item may have changed: its own row, a translation, a term, a field value, or a shared row it shows.'),
      WebhookEntryUnpublished: entryMessage('unpublished', 'An entry stopped being live, or was removed.'),
      WebhookContentChanged: {
        type: 'object',
        additionalProperties: false,
        required: ['type', 'timestamp', 'data'],
        description: 'What changed in a debounce window: sent once no change came for `debounce_ms`, and at least every max(10 × `debounce_ms`, 60 s) under a steady stream of writes.',
        properties: {
          type: { const: 'content.changed' },
          timestamp: { type: 'string', format: 'date-time' },
          data: {
            type: 'object',
            additionalProperties: false,
            required: ['types', 'published', 'updated', 'unpublished'],
            properties: {
              types: { type: 'array', items: { type: 'string' }, description: 'The slugs of the content types changed.' },
              published: ids,
              updated: ids,
              unpublished: ids,
              truncated: { const: true, description: `Present when a list would have held more than ${MAX_IDS_PER_LIST} ids: rebuild everything.` },
            },
          },
        },
      },
    },
    webhooks: {
      'entry.published': message('entryPublished', 'An entry went live', 'To an endpoint with `debounce_ms` 0, one message per entry, after the commit, in change-log order.', 'WebhookEntryPublished'),
      'entry.updated': message('entryUpdated', 'A live entry changed', 'To an endpoint with `debounce_ms` 0.', 'WebhookEntryUpdated'),
      'entry.unpublished': message('entryUnpublished', 'An entry is no longer live', 'To an endpoint with `debounce_ms` 0.', 'WebhookEntryUnpublished'),
      'content.changed': message('contentChanged', 'Content changed (a build hook)', 'To an endpoint with `debounce_ms` > 0: Netlify, Vercel and Cloudflare Pages build hooks.', 'WebhookContentChanged'),
    },
  }
}
