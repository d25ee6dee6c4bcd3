/**
 * A receiver of Vitrine's webhooks (C57) that trusts nothing it cannot
 * verify: each message's signature and timestamp are checked with the
 * `standardwebhooks` package (`bun add standardwebhooks`, or the Standard
 * Webhooks library of your language), a message already seen (by its
 * `webhook-id`: a retry, or the one in flight when the sender restarted) is
 * acknowledged and skipped, and only then is the work done. Answer 2xx fast:
 * anything else, or no answer within 15 s, is retried.
 *
 *   WEBHOOK_SECRET=whsec_… bun examples/webhook-receiver.ts
 *
 * @example const server = startReceiver({ secret, port: 0, onMessage: (message) => console.log(message.type) })
 */
import { Webhook } from 'standardwebhooks'

/** What Vitrine sends: `entry.published`, `entry.updated`, `entry.unpublished` or `content.changed`. */
export interface VitrineMessage {
  type: string
  timestamp: string
  data: Record<string, unknown>
}

export interface ReceiverOptions {
  /** The endpoint's secret, `whsec_…`, as `bun run webhooks add URL --secret` printed it. */
  secret: string
  port: number
  /** The work: rebuild a page, refresh a list, start a build. */
  onMessage(message: VitrineMessage, id: string): void | Promise<void>
}

export function startReceiver({ secret, port, onMessage }: ReceiverOptions) {
  const verifier = new Webhook(secret)
  // In production, keep these where a restart does not forget them (a table, Redis) for a day.
  const seen = new Set<string>()
  return Bun.serve({
    port,
    async fetch(request) {
      if (request.method !== 'POST') return new Response('POST only', { status: 405 })
      const body = await request.text()
      let message: VitrineMessage
      try {
        // Checks webhook-signature against webhook-id, webhook-timestamp and the body, and refuses
        // a timestamp more than 5 minutes away (a replayed message).
        message = verifier.verify(body, Object.fromEntries(request.headers)) as VitrineMessage
      } catch {
        return new Response('invalid signature', { status: 401 })
      }
      const id = request.headers.get('webhook-id')!
      if (seen.has(id)) return new Response(null, { status: 204 })
      await onMessage(message, id)
      seen.add(id)
      return new Response(null, { status: 204 })
    },
  })
}

if (import.meta.main) {
  const secret = process.env.WEBHOOK_SECRET
  if (!secret) throw new Error('Set WEBHOOK_SECRET to the endpoint\'s whsec_ secret.')
  const server = startReceiver({ secret, port: Number(process.env.PORT ?? 8787), onMessage: (message, id) => console.log(id, message.type, JSON.stringify(message.data)) })
  console.log(`Receiving Vitrine's webhooks on ${server.url}`)
}
