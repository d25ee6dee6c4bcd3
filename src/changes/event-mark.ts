import { badRequest } from '../http/errors'

/**
 * A place in the change log for the event stream (C49), over every type: the
 * rows after `position`, the rows of the transactions in `inProgress` (they
 * held lower positions and had not committed: sql/change-log.md) and the
 * entries whose publication time falls after `atMicros` are what it has not
 * seen yet.
 */
export interface EventMark {
  position: string
  inProgress: string[]
  /** The statement's now(), in microseconds since 1970 (exact: it goes back to PostgreSQL as an integer). */
  atMicros: string
}

export const INVALID_EVENT_ID = 'The Last-Event-ID header is not an event id of this stream.'

/** More transactions in progress than this at once: the id would outgrow a header's comfort (as sync tokens). */
const MAX_IN_PROGRESS = 500
/** How far the database's clock, which writes the marks, may run ahead of the service's. */
const CLOCK_SLACK_MICROS = 86_400_000_000n

const MAX_XID = 2n ** 64n - 1n

const ID_SYNTAX = /^(\d{1,18})\.(\d{1,18})(?:\.(\d{1,20}(?:-\d{1,20})*))?$/

/**
 * The `id:` of an event, which a client sends back as `Last-Event-ID`:
 * `<position>.<microseconds>[.<xid>-<xid>…]`, resumable on every instance and
 * across restarts (the microseconds are those of the read that made it: two
 * instances reading one change make ids that differ there).
 * @example encodeEventMark({ position: '42', inProgress: [], atMicros: '1764000000000000' }) // '42.1764000000000000'
 */
export function encodeEventMark(mark: EventMark): string {
  const base = `${mark.position}.${mark.atMicros}`
  return mark.inProgress.length ? `${base}.${mark.inProgress.join('-')}` : base
}

/**
 * A `Last-Event-ID` read back; anything this service did not write is a 400
 * (a time in the future included: no id of ours is).
 * @example decodeEventMark('42.1764000000000000') // { position: '42', inProgress: [], atMicros: '1764000000000000' }
 */
export function decodeEventMark(text: string): EventMark {
  const match = ID_SYNTAX.exec(text)
  if (!match) throw badRequest(INVALID_EVENT_ID)
  const [, position, atMicros, xids] = match
  const inProgress = xids ? xids.split('-') : []
  if (inProgress.length > MAX_IN_PROGRESS || BigInt(atMicros!) > BigInt(Date.now()) * 1000n + CLOCK_SLACK_MICROS) throw badRequest(INVALID_EVENT_ID)
  // A transaction id is a 64-bit number: a longer one would reach PostgreSQL as an error, not as a mark.
  if (inProgress.some((xid) => BigInt(xid) > MAX_XID)) throw badRequest(INVALID_EVENT_ID)
  return { position: position!, inProgress, atMicros: atMicros! }
}
