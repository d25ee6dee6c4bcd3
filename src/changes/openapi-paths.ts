import type { TObject } from '@sinclair/typebox'
import { syncBody } from '../content/schemas'
import { CONTENT_ANSWER, EVERY_ANSWER, errorResponse, headers, json, ref, type OpenApiDeclaration } from '../http/openapi-declarations'
import { INVALID_EVENT_ID } from './event-mark'
import { EVENTS_PATH } from './event-routes'
import { MAX_IDS_PER_EVENT } from './event-statement'
import { SYNC_PATH } from './routes'
import { DEFAULT_SYNC_PER_PAGE, MAX_SYNC_PER_PAGE } from './sync-answer'
import { EXPIRED_TOKEN, INVALID_TOKEN } from './sync-token'

/**
 * The sync route and the event stream in the OpenAPI document: their paths,
 * the sync page (its items as the extensions declare them) and their
 * parameters. Change it with routes.ts and event-routes.ts.
 * @example changesOpenApi(registry.itemSchema).paths['/api/v1/sync/:type']
 */
export function changesOpenApi(itemSchema: TObject): OpenApiDeclaration {
  const contentHeaders = headers(...CONTENT_ANSWER)
  return {
    schemas: {
      SyncPage: syncBody(itemSchema),
    },
    paths: {
      [SYNC_PATH]: {
        parameters: [ref('parameters', 'ContentType')],
        get: {
          operationId: 'syncContent',
          tags: ['sync'],
          summary: 'Sync a content type: every live entry, then what changed',
          description: [
            'Without `token`: every live entry of the type, by id, in pages. The last page gives `meta.next_sync_url`; ask it later for',
            'the entries whose item may have changed since (`data`, by their latest state: their own rows, translations, terms, author,',
            'image, field values, a shared row they show renamed, or their publication time come) and the ids of those that stopped',
            'being live or were removed (`deleted`). Exactly one of `next_page_url` and `next_sync_url` is set. Applying a first sync',
            'and its deltas to a copy gives exactly the live entries a fresh sync gives. Items are the lists\' (the filter hook applied).',
            'Tokens are opaque, survive restarts and work on every instance. A delta costs about the number of changes.',
          ].join('\n'),
          parameters: [ref('parameters', 'SyncPerPage'), ref('parameters', 'Lang'), ref('parameters', 'SyncToken'), ref('parameters', 'IfNoneMatch')],
          responses: {
            '200': { description: 'A page of the sync.', headers: contentHeaders, ...json(ref('schemas', 'SyncPage')) },
            '304': ref('responses', 'NotModified'),
            '400': errorResponse('A bad `per_page`, or a token this service did not make, or made for another type or language.', ['The per_page parameter must be a positive integer.', INVALID_TOKEN], [...EVERY_ANSWER, 'Cache-Control']),
            '404': errorResponse('The content type does not exist.', ['Content type not found.'], EVERY_ANSWER),
            '410': errorResponse('The token is older than the retention (`SYNC_RETENTION_DAYS`), or the change log it needs was pruned or declared incomplete: start a new sync.', [EXPIRED_TOKEN], EVERY_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        refusedAs: 'Sync',
      },
      [EVENTS_PATH]: {
        get: {
          operationId: 'streamEvents',
          tags: ['sync'],
          summary: 'A live stream of what changed (Server-Sent Events)',
          description: [
            'A `text/event-stream` that stays open (C49). After each commit that may change items, and at the second an embargoed entry',
            'goes live, one `event: change` per type, `data: {"type": "post", "ids": [1, 2]}`: the entries whose items may have changed or',
            `stopped being live (\`"ids": null\`: anything of the type, as after a custom field or a language changed, or past ${MAX_IDS_PER_EVENT}`,
            'entries). Each event has an `id:`; a client that reconnects with it in `Last-Event-ID` (EventSource does) gets what it missed',
            'from the change log first, or `event: reset` (`data: {}`) when that is older than the retention: sync again. The stream opens',
            'with an `id:` line alone, and a comment line (`:`) comes every 15 s. Streams per process are bounded (`EVENTS_MAX_SUBSCRIBERS`);',
            'a client that does not read is dropped. A graceful stop ends every stream: reconnect.',
          ].join('\n'),
          parameters: [ref('parameters', 'EventTypes'), ref('parameters', 'LastEventId')],
          responses: {
            '200': {
              description: 'The stream: `Cache-Control: no-store`.',
              headers: headers(...EVERY_ANSWER, 'Cache-Control'),
              content: {
                'text/event-stream': {
                  schema: { type: 'string' },
                  example: 'id: 41.1795551032630679\n\nevent: change\nid: 42.1795551032642072\ndata: {"type":"post","ids":[7]}\n\n:\n\n',
                },
              },
            },
            '400': errorResponse('`Last-Event-ID` is not an id this stream sent.', [INVALID_EVENT_ID], EVERY_ANSWER),
            '404': errorResponse('`types` names a content type that does not exist.', ['Content type not found.'], EVERY_ANSWER),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'ServiceUnavailable'),
          },
        },
        refusedAs: 'Events',
      },
    },
    parameters: {
      SyncPerPage: {
        name: 'per_page',
        in: 'query',
        description: `Entries per page of a sync (live and deleted together), in decimal digits. A value above ${MAX_SYNC_PER_PAGE} is clamped to ${MAX_SYNC_PER_PAGE}; anything else is a 400.`,
        schema: { type: 'integer', minimum: 1, default: DEFAULT_SYNC_PER_PAGE },
      },
      SyncToken: {
        name: 'token',
        in: 'query',
        description: 'An opaque sync token, from `meta.next_page_url` or `meta.next_sync_url` of an earlier page. Absent: a new sync.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
      },
      EventTypes: {
        name: 'types',
        in: 'query',
        description: 'Content type slugs, comma-separated: only their events. Absent or empty: every type. Each must exist (404).',
        example: 'post,page',
        schema: { type: 'string' },
      },
      LastEventId: {
        name: 'Last-Event-ID',
        in: 'header',
        description: 'The `id` of the last event received: the stream starts with what changed since (EventSource sends it when it reconnects).',
        schema: { type: 'string', pattern: '^\\d{1,18}\\.\\d{1,18}(\\.\\d{1,20}(-\\d{1,20})*)?$', examples: ['42.1795551032642072'] },
      },
    },
  }
}
