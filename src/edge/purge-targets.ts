import type { Config, PurgeTarget } from '../config'

/** What sending a purge needs besides the target (C51). */
export type PurgeApis = Pick<Config, 'fastlyApiUrl' | 'fastlyApiToken' | 'cloudflareApiUrl' | 'cloudflareApiToken'>

/**
 * The most bytes of keys in one `xkey` header: with the request line and the
 * headers Bun adds (Host, User-Agent, Accept, …, about 200 bytes), a request
 * stays under 7 500 bytes of headers, below Varnish's 8 KB per header.
 */
export const XKEY_HEADER_BYTES = 7000
/** Fastly's purge by surrogate key takes at most 256 keys a request. */
export const FASTLY_KEYS_PER_REQUEST = 256
/** Cloudflare's purge by tag takes at most 100 tags a request. */
export const CLOUDFLARE_TAGS_PER_REQUEST = 100
/** A purge not answered within this is a failure, retried. */
export const PURGE_TIMEOUT_MS = 2000

/**
 * The target as logs and counters name it: the URL it was configured with.
 * @example targetName({ kind: 'fastly', service: 'abc' }) // 'fastly://abc'
 */
export function targetName(target: PurgeTarget): string {
  if (target.kind === 'xkey') return target.url
  return target.kind === 'fastly' ? `fastly://${target.service}` : `cloudflare://${target.zone}`
}

/**
 * `keys` in as few requests as the target takes: by header bytes for xkey, by count for the CDNs' APIs.
 * @example purgeBatches({ kind: 'fastly', service: 'abc' }, keys).length // Math.ceil(keys.length / 256)
 */
export function purgeBatches(target: PurgeTarget, keys: readonly string[]): string[][] {
  if (target.kind !== 'xkey') {
    const size = target.kind === 'fastly' ? FASTLY_KEYS_PER_REQUEST : CLOUDFLARE_TAGS_PER_REQUEST
    const batches: string[][] = []
    for (let start = 0; start < keys.length; start += size) batches.push(keys.slice(start, start + size))
    return batches
  }
  const batches: string[][] = []
  let batch: string[] = []
  let bytes = 0
  for (const key of keys) {
    // Keys are ASCII: a tag percent-encodes anything else (C34).
    if (batch.length > 0 && bytes + 1 + key.length > XKEY_HEADER_BYTES) {
      batches.push(batch)
      batch = []
      bytes = 0
    }
    bytes += (batch.length > 0 ? 1 : 0) + key.length
    batch.push(key)
  }
  if (batch.length > 0) batches.push(batch)
  return batches
}

/**
 * One purge request; resolves once the target acknowledged it (2xx), throws
 * otherwise (another status, refused, no answer within PURGE_TIMEOUT_MS).
 * Bun's fetch sends `PURGE` as it is (an unknown method would go out as GET):
 * test/edge-purger.test.ts checks the bytes on the wire.
 * @example await sendPurge({ kind: 'xkey', url: 'http://127.0.0.1:6081/' }, ['entry-42'], apis)
 */
export async function sendPurge(target: PurgeTarget, keys: readonly string[], apis: PurgeApis): Promise<void> {
  const signal = AbortSignal.timeout(PURGE_TIMEOUT_MS)
  let response: Response
  if (target.kind === 'xkey') {
    response = await fetch(target.url, { method: 'PURGE', headers: { xkey: keys.join(' ') }, signal })
  } else if (target.kind === 'fastly') {
    response = await fetch(`${apis.fastlyApiUrl}/service/${target.service}/purge`, {
      method: 'POST',
      headers: { 'Fastly-Key': apis.fastlyApiToken ?? '', 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ surrogate_keys: keys }),
      signal,
    })
  } else {
    response = await fetch(`${apis.cloudflareApiUrl}/client/v4/zones/${target.zone}/purge_cache`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apis.cloudflareApiToken ?? ''}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ tags: keys }),
      signal,
    })
  }
  // Read to the end: the connection goes back to the pool.
  await response.arrayBuffer()
  if (response.status < 200 || response.status > 299) throw new Error(`${targetName(target)} answered ${response.status}`)
}
