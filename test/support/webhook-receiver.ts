import { Webhook } from 'standardwebhooks'

/** One message as a receiver got it. */
export interface Received {
  id: string
  /** The message, parsed; for a signed endpoint, as the standardwebhooks package verified it. */
  message: { type: string; timestamp: string; data: any }
  headers: Record<string, string>
  /** performance.now() when it arrived. */
  at: number
  /** What the receiver answered. */
  status: number
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>/hook/<path>` (a path: a build hook's secret, never logged). */
  url: string
  port: number
  received: Received[]
  /** Attempts that failed verification, with why. */
  rejected: string[]
  /** What the next attempts are answered; 204 by default. */
  answer: (message: Received) => number | Response
  /** Messages whose status was 2xx, in arrival order. */
  delivered(): Received[]
  stop(): void
  /** Listens again on the same port after `stop`. */
  restart(): void
}

/**
 * A local receiver of webhooks (C57) that verifies every message with the
 * `standardwebhooks` package, as a receiver in the wild would (a message that
 * fails is answered 401 and kept in `rejected`).
 * @example const receiver = startWebhookReceiver(secret)
 */
export function startWebhookReceiver(secret: string | null, port = 0): WebhookReceiver {
  const verifier = secret ? new Webhook(secret) : null
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    rejected: [],
    answer: () => 204,
    delivered: () => receiver.received.filter((each) => each.status >= 200 && each.status < 300),
    stop: () => server.stop(true),
    restart: () => {
      server = serve(receiver.port)
    },
  }
  const serve = (on: number) =>
    Bun.serve({
      hostname: '127.0.0.1',
      port: on,
      async fetch(request) {
        const body = await request.text()
        const headers = Object.fromEntries(request.headers.entries())
        let message: Received['message']
        try {
          message = (verifier ? verifier.verify(body, headers) : JSON.parse(body)) as Received['message']
        } catch (error) {
          receiver.rejected.push((error as Error).message)
          return new Response('unverified', { status: 401 })
        }
        const received: Received = { id: headers['webhook-id'] ?? '', message, headers, at: performance.now(), status: 0 }
        const answer = receiver.answer(received)
        const response = typeof answer === 'number' ? new Response(null, { status: answer }) : answer
        received.status = response.status
        receiver.received.push(received)
        return response
      },
    })
  let server = serve(port)
  receiver.port = server.port!
  receiver.url = `http://127.0.0.1:${server.port}/hook/b7e1c0ffee`
  return receiver
}
