import { badRequest, HttpError } from '../http/errors'

/**
 * A place in the change log (sql/change-log.md): what one statement saw. The
 * rows after `typePosition` of the type and after `sharedPosition` of the
 * shared rows, plus the rows of the transactions in `inProgress`, are what it
 * did not see; entries whose publication time falls after `at` went live after it.
 */
export interface LogMark {
  typePosition: string
  sharedPosition: string
  /** The transactions in progress when the statement took its snapshot (pg_snapshot_xip). */
  inProgress: string[]
  /** The statement's now(), RFC 3339 to the microsecond, in UTC. */
  at: string
}

/**
 * What a sync URL's `token` carries (C48): the type and language it belongs
 * to, the mark the changes are read since (null: the first sync), the mark
 * this sync will hand on once its last page is read (null: not read yet), and
 * the last entry id of the pages already read.
 */
export interface SyncToken {
  typeId: number
  language: string
  since: LogMark | null
  until: LogMark | null
  afterId: number
}

export const INVALID_TOKEN = 'The token parameter is not a valid sync token.'
export const EXPIRED_TOKEN = 'The sync token has expired: start a new sync.'

/** More transactions in progress than this at once: the token would grow past a URL's comfort. */
const MAX_IN_PROGRESS = 500

export const invalidToken = () => badRequest(INVALID_TOKEN)
export const expiredToken = () => new HttpError(410, EXPIRED_TOKEN)

/**
 * The token as it goes in a URL: JSON in base64url, opaque to clients, the
 * same on every instance and across restarts (it holds no secret and no state
 * of a process).
 * @example encodeSyncToken({ typeId: 1, language: 'en', since: null, until: null, afterId: 0 })
 */
export function encodeSyncToken(token: SyncToken): string {
  const mark = (m: LogMark | null) => (m === null ? null : [m.typePosition, m.sharedPosition, m.inProgress, m.at])
  return Buffer.from(JSON.stringify([1, token.typeId, token.language, mark(token.since), mark(token.until), token.afterId])).toString('base64url')
}

/**
 * A token read back; anything that is not one this service wrote is a 400 (C48).
 * @example decodeSyncToken(encodeSyncToken(token)) // token
 */
export function decodeSyncToken(text: string): SyncToken {
  let value: unknown
  try {
    if (!/^[A-Za-z0-9_-]{1,16384}$/.test(text)) throw invalidToken()
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
  } catch {
    throw invalidToken()
  }
  if (!Array.isArray(value) || value.length !== 6 || value[0] !== 1) throw invalidToken()
  const [, typeId, language, since, until, afterId] = value
  if (!isId(typeId) || typeof language !== 'string' || !(afterId === 0 || isId(afterId))) throw invalidToken()
  return { typeId, language, since: readMark(since), until: readMark(until), afterId }
}

function readMark(value: unknown): LogMark | null {
  if (value === null) return null
  if (!Array.isArray(value) || value.length !== 4) throw invalidToken()
  const [typePosition, sharedPosition, inProgress, at] = value
  const digits = (text: unknown) => typeof text === 'string' && /^\d{1,18}$/.test(text)
  if (!digits(typePosition) || !digits(sharedPosition)) throw invalidToken()
  if (!Array.isArray(inProgress) || inProgress.length > MAX_IN_PROGRESS || !inProgress.every(digits)) throw invalidToken()
  if (typeof at !== 'string' || !isPastInstant(at)) throw invalidToken()
  return { typePosition, sharedPosition, inProgress, at }
}

/**
 * A mark's time as the service writes it (`2026-11-24T18:00:00.123456Z`), a real
 * instant (Date.parse takes 30 February as 2 March; PostgreSQL refuses it) and
 * not in the future (no token of ours is, give or take the database's clock against
 * ours): anything else is a forged token.
 */
/** How far the database's clock, which writes the marks, may run ahead of the service's. */
const CLOCK_SLACK_MS = 86_400_000

function isPastInstant(at: string): boolean {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(at)) return false
  const ms = Date.parse(at)
  // Microseconds are past what a Date holds: compare up to the milliseconds.
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 23) === at.slice(0, 23) && ms <= Date.now() + CLOCK_SLACK_MS
}

function isId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0
}
