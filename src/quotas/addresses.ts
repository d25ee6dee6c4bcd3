import { isIP } from 'node:net'

/**
 * IP addresses as C52 keys clients by: every address as 16 bytes (an IPv4
 * address as its IPv4-mapped IPv6 form, so `::ffff:192.0.2.1` and `192.0.2.1`
 * are one), ranges as a prefix of those bytes.
 */

/** An address or a CIDR range of TRUSTED_PROXIES: its first `bits` bits. */
export interface AddressRange {
  bytes: Uint8Array
  bits: number
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]

/**
 * An address as written in a socket's peer or in `X-Forwarded-For`: IPv4,
 * IPv6 (a zone `%eth0` dropped), either with a port (`192.0.2.1:443`,
 * `[2001:db8::1]:443`). Null when it is none of these (`unknown`, a name).
 * @example parseAddress('::ffff:192.0.2.1') // the same 16 bytes as parseAddress('192.0.2.1')
 */
export function parseAddress(written: string): Uint8Array | null {
  let text = written.trim()
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    if (end === -1) return null
    text = text.slice(1, end)
  } else if (text.indexOf(':') !== -1 && text.indexOf(':') === text.lastIndexOf(':') && text.indexOf('.') !== -1) {
    // IPv4 with a port: the only form with exactly one colon.
    text = text.slice(0, text.indexOf(':'))
  }
  const zone = text.indexOf('%')
  if (zone !== -1) text = text.slice(0, zone)
  const family = isIP(text)
  if (family === 4) return mappedIPv4(text)
  if (family === 6) return ipv6Bytes(text)
  return null
}

/**
 * One entry of TRUSTED_PROXIES: an address (`10.0.0.7`, `2001:db8::7`) or a
 * CIDR range (`10.0.0.0/8`, `2001:db8::/32`); null when it is neither.
 * @example parseAddressRange('10.0.0.0/8')?.bits // 104 (96 + 8: IPv4 counts as IPv4-mapped IPv6)
 */
export function parseAddressRange(text: string): AddressRange | null {
  const [address, length, extra] = text.trim().split('/')
  if (extra !== undefined || address === undefined || address.includes('[') || address.includes('%')) return null
  const family = isIP(address)
  if (family === 0) return null
  const bytes = family === 4 ? mappedIPv4(address) : ipv6Bytes(address)
  const max = family === 4 ? 32 : 128
  if (length === undefined) return { bytes, bits: 128 }
  if (!/^\d{1,3}$/.test(length) || Number(length) > max) return null
  return { bytes, bits: Number(length) + (family === 4 ? 96 : 0) }
}

/**
 * Whether `address` lies in one of `ranges`.
 * @example inRanges(parseAddress('10.1.2.3')!, [parseAddressRange('10.0.0.0/8')!]) // true
 */
export function inRanges(address: Uint8Array, ranges: readonly AddressRange[]): boolean {
  return ranges.some((range) => inRange(address, range))
}

/**
 * The key C52 counts a client under: an IPv4 address as itself, an IPv6
 * address by its /64 (one subscriber's network: an ISP hands out a /64 or
 * more, and a host picks any address in it), IPv4-mapped IPv6 as IPv4.
 * @example clientKeyOf(parseAddress('2001:db8:1:2:aaaa::1')!) // '2001:db8:1:2::/64'
 */
export function clientKeyOf(address: Uint8Array): string {
  if (isMapped(address)) return `${address[12]}.${address[13]}.${address[14]}.${address[15]}`
  const groups: string[] = []
  for (let i = 0; i < 8; i += 2) groups.push(((address[i]! << 8) | address[i + 1]!).toString(16))
  return `${groups.join(':')}::/64`
}

function inRange(address: Uint8Array, { bytes, bits }: AddressRange): boolean {
  const whole = bits >> 3
  for (let i = 0; i < whole; i++) if (address[i] !== bytes[i]) return false
  const rest = bits & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return (address[whole]! & mask) === (bytes[whole]! & mask)
}

function isMapped(address: Uint8Array): boolean {
  for (let i = 0; i < 12; i++) if (address[i] !== MAPPED_PREFIX[i]) return false
  return true
}

/** A dotted IPv4 address (isIP checked it) as IPv4-mapped IPv6. */
function mappedIPv4(text: string): Uint8Array {
  const bytes = new Uint8Array(16)
  bytes.set(MAPPED_PREFIX)
  text.split('.').forEach((part, i) => (bytes[12 + i] = Number(part)))
  return bytes
}

/** An IPv6 address (isIP checked it): `::` expanded, a trailing dotted IPv4 as two groups. */
function ipv6Bytes(text: string): Uint8Array {
  const groupsOf = (part: string): number[] => {
    if (part === '') return []
    return part.split(':').flatMap((group) => {
      if (!group.includes('.')) return [parseInt(group, 16)]
      const v4 = mappedIPv4(group)
      return [(v4[12]! << 8) | v4[13]!, (v4[14]! << 8) | v4[15]!]
    })
  }
  const gap = text.indexOf('::')
  const head = groupsOf(gap === -1 ? text : text.slice(0, gap))
  const tail = gap === -1 ? [] : groupsOf(text.slice(gap + 2))
  const groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
  const bytes = new Uint8Array(16)
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8
    bytes[2 * i + 1] = group & 0xff
  })
  return bytes
}
