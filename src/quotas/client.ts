import { clientKeyOf, inRanges, parseAddress, type AddressRange } from './addresses'

/** The key of a request whose peer is not known (a request made in process, under tests). */
export const UNKNOWN_CLIENT = 'unknown'

/**
 * C52: who a request counts against. The client is the connection's peer;
 * when the peer is one of `trustedProxies`, `X-Forwarded-For` is read from
 * the right: each trusted proxy appended the address it got the request from,
 * so the right-most address that is not a trusted proxy is the first one no
 * proxy of ours vouches for (everything to its left is whatever the client
 * wrote). When every address is a trusted proxy, the left-most. An entry
 * that is not an address (`unknown`) stops the walk at the proxy that wrote it.
 * @example clientKey('10.0.0.2', '198.51.100.7, 203.0.113.9, 10.0.0.1', [parseAddressRange('10.0.0.0/8')!]) // '203.0.113.9'
 */
export function clientKey(peer: string | null, forwardedFor: string | null, trustedProxies: readonly AddressRange[]): string {
  if (peer === null) return UNKNOWN_CLIENT
  const address = parseAddress(peer)
  if (address === null) return peer
  if (trustedProxies.length === 0 || forwardedFor === null || !inRanges(address, trustedProxies)) return clientKeyOf(address)
  let client = address
  const hops = forwardedFor.split(',')
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseAddress(hops[i]!)
    if (hop === null) break
    client = hop
    if (!inRanges(hop, trustedProxies)) break
  }
  return clientKeyOf(client)
}
