import { lookup } from 'node:dns'
import { isIP } from 'node:net'
import { inRanges, parseAddress, parseAddressRange, type AddressRange } from '../quotas/addresses'

/**
 * The addresses a webhook is never delivered to unless WEBHOOK_ALLOW_PRIVATE=true (C57): what a request
 * from the service's own network could reach that the internet cannot (its loopback, its private
 * networks, the cloud's metadata service). IPv4 ranges hold for their IPv4-mapped IPv6 forms too.
 */
export const REFUSED_RANGES: readonly AddressRange[] = [
  '0.0.0.0/8', // unspecified, "this network"
  '10.0.0.0/8', // RFC 1918
  '100.64.0.0/10', // carrier-grade NAT (RFC 6598)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, the cloud metadata address 169.254.169.254 among them
  '172.16.0.0/12', // RFC 1918
  '192.0.0.0/24', // IETF protocol assignments
  '192.168.0.0/16', // RFC 1918
  '198.18.0.0/15', // benchmarking
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, broadcast
  '::/128', // unspecified
  '::1/128', // loopback
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'ff00::/8', // multicast
  // IPv6 forms that carry an IPv4 address a gateway translates to: any IPv4 address behind them, loopback and
  // private ones included, so all of them.
  '::/96', // IPv4-compatible (deprecated)
  '::ffff:0:0:0/96', // IPv4-translated (SIIT)
  '64:ff9b::/96', // NAT64, well-known prefix
  '64:ff9b:1::/48', // NAT64, local use
  '2001::/32', // Teredo
  '2002::/16', // 6to4
].map((text) => parseAddressRange(text)!)

/** Why a delivery was not even tried: its address is one of REFUSED_RANGES. */
export class RefusedAddressError extends Error {
  readonly code = 'VITRINE_WEBHOOK_ADDRESS_REFUSED'
}

/**
 * Whether `address` (IPv4 or IPv6 text) is one a webhook may not reach without WEBHOOK_ALLOW_PRIVATE.
 * @example isRefusedAddress('169.254.169.254') // true
 */
export function isRefusedAddress(address: string): boolean {
  const bytes = parseAddress(address)
  return bytes === null || inRanges(bytes, REFUSED_RANGES)
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void

/**
 * The `lookup` of node:http's request options that refuses the addresses
 * above: a host name is resolved here, and the address handed to the socket
 * is one this function checked, so a name that resolves to a private address
 * (or rebinds to one between two lookups) is refused on the address actually
 * connected to. Every address a name has must pass: one private address
 * among public ones is refused too.
 * @example http.request({ host, lookup: guardedLookup(false) })
 */
export function guardedLookup(allowPrivate: boolean) {
  return (host: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    lookup(host, { all: true, family: options.family ?? 0 }, (error, found) => {
      if (error) return callback(error, [])
      const addresses = found as { address: string; family: number }[]
      const refused = allowPrivate ? undefined : addresses.find((each) => isRefusedAddress(each.address))
      if (refused !== undefined || addresses.length === 0) {
        return callback(new RefusedAddressError(`${host} resolves to ${refused?.address ?? 'nothing'}, an address webhooks may not reach (WEBHOOK_ALLOW_PRIVATE=true allows it)`) as NodeJS.ErrnoException, [])
      }
      if (options.all) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

/**
 * A URL's host that is an IP address itself, checked before any connection
 * (the socket does not look a literal address up). Null when it may be tried.
 * @example literalAddressRefusal('http://[::1]:8080/hook', false) // 'the address ::1 …'
 */
export function literalAddressRefusal(url: URL, allowPrivate: boolean): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  if (allowPrivate || isIP(host) === 0 || !isRefusedAddress(host)) return null
  return `the address ${host} is one webhooks may not reach (WEBHOOK_ALLOW_PRIVATE=true allows it)`
}
