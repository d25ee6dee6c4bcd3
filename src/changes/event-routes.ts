import { Elysia, t } from 'elysia'
import type { AppDependencies } from '../app-dependencies'
import { rejectMethod } from '../http/api-route'
import { serviceUnavailable } from '../http/errors'
import { decodeEventMark } from './event-mark'

/** The event stream's route; ./openapi-paths.ts declares it in the OpenAPI document. */
export const EVENTS_PATH = '/api/v1/events'

export const EventsQuery = t.Object({ types: t.Optional(t.String()) }, { additionalProperties: true })

/** What every answer of the stream says about itself (C49); CORS comes from the policy. */
const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-store',
  // A proxy that buffers (nginx) would hold the events back.
  'X-Accel-Buffering': 'no',
}

/**
 * `GET /api/v1/events` (C49): a Server-Sent Events stream of what changed,
 * per type, from the process's event feed. Parameters (`types`, the
 * `Last-Event-ID` header) are checked first; the stream starts once the
 * client's catch-up, if any, is read. HEAD answers the headers alone.
 */
export function eventRoutes({ events, closeConnection }: AppDependencies) {
  return new Elysia({ name: 'event-routes' })
    .get(
      EVENTS_PATH,
      async ({ query, request, set }) => {
        const types = readTypes(query.types)
        const lastEventId = request.headers.get('last-event-id')
        const since = lastEventId === null || lastEventId === '' ? null : decodeEventMark(lastEventId)
        if (!events) throw serviceUnavailable()
        Object.assign(set.headers, STREAM_HEADERS)
        if (request.method === 'HEAD') return new Response(null, { headers: STREAM_HEADERS })
        const stream = await events.subscribe({ types, since, closeConnection: () => closeConnection?.(request) })
        return new Response(stream, { headers: STREAM_HEADERS })
      },
      { query: EventsQuery },
    )
    .all(EVENTS_PATH, ({ request }) => rejectMethod(request))
}

/** `types=post,page`: type slugs, each once; absent or empty, every type. */
function readTypes(value: string | undefined): string[] | null {
  const types = [...new Set((value ?? '').split(',').filter((type) => type !== ''))]
  return types.length ? types : null
}
