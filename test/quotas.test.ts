import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'
import { clientKeyOf, parseAddress, parseAddressRange } from '../src/quotas/addresses'
import { clientKey, UNKNOWN_CLIENT } from '../src/quotas/client'
import { MAX_CLIENTS, TokenBuckets } from '../src/quotas/token-buckets'
import { cachedTestApp, type CachedTestApp } from './support/cached-app'
import { createTestDatabase } from './support/database'
import { addEntry, clearContent } from './support/fixtures'
import { startService, type RunningService } from './support/service'
import { waitFor } from './support/wait'

const ranges = (...texts: string[]) => texts.map((text) => parseAddressRange(text)!)

describe('C52: who the client is', () => {
  test('C52: without TRUSTED_PROXIES the peer is the client, whatever X-Forwarded-For says', () => {
    expect(clientKey('192.0.2.7', '203.0.113.1', [])).toBe('192.0.2.7')
    expect(clientKey('192.0.2.7', null, [])).toBe('192.0.2.7')
    expect(clientKey(null, '203.0.113.1', ranges('0.0.0.0/0'))).toBe(UNKNOWN_CLIENT)
    // A peer that is not a trusted proxy: its header is not believed either.
    expect(clientKey('192.0.2.7', '203.0.113.1', ranges('10.0.0.0/8'))).toBe('192.0.2.7')
  })

  test('C52: behind trusted proxies, the right-most address that is not one; a forged left-most address is never believed', () => {
    const trusted = ranges('10.0.0.0/8', '2001:db8:ffff::/48')
    expect(clientKey('10.0.0.2', '203.0.113.9', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '198.51.100.7, 203.0.113.9', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '198.51.100.7, 203.0.113.9, 10.1.1.1, 10.2.2.2', trusted)).toBe('203.0.113.9')
    expect(clientKey('::ffff:10.0.0.2', '198.51.100.7,203.0.113.9 ,2001:db8:ffff::1', trusted)).toBe('203.0.113.9')
    // Every hop trusted: the left-most.
    expect(clientKey('10.0.0.2', '10.9.9.9, 10.1.1.1', trusted)).toBe('10.9.9.9')
    // No header: the proxy itself. Something that is no address: the proxy that wrote it.
    expect(clientKey('10.0.0.2', null, trusted)).toBe('10.0.0.2')
    expect(clientKey('10.0.0.2', '203.0.113.9, unknown', trusted)).toBe('10.0.0.2')
    expect(clientKey('10.0.0.2', '203.0.113.9, unknown, 10.1.1.1', trusted)).toBe('10.1.1.1')
    // Ports, as some proxies write them.
    expect(clientKey('10.0.0.2', '203.0.113.9:5123', trusted)).toBe('203.0.113.9')
    expect(clientKey('10.0.0.2', '[2001:db8:1:2::7]:443', trusted)).toBe('2001:db8:1:2::/64')
  })

  test('C52: IPv6 counts per /64, IPv4-mapped IPv6 as IPv4', () => {
    expect(clientKeyOf(parseAddress('2001:db8:1:2:aaaa:bbbb:cccc:dddd')!)).toBe('2001:db8:1:2::/64')
    expect(clientKeyOf(parseAddress('2001:db8:1:2::1')!)).toBe('2001:db8:1:2::/64')
    expect(clientKeyOf(parseAddress('2001:0db8:0001:0003::1')!)).toBe('2001:db8:1:3::/64')
    expect(clientKeyOf(parseAddress('::1')!)).toBe('0:0:0:0::/64')
    expect(clientKeyOf(parseAddress('fe80::1%eth0')!)).toBe('fe80:0:0:0::/64')
    expect(clientKeyOf(parseAddress('::ffff:192.0.2.1')!)).toBe('192.0.2.1')
    expect(clientKeyOf(parseAddress('::ffff:c000:201')!)).toBe('192.0.2.1')
    expect(parseAddress('unknown')).toBeNull()
    expect(parseAddress('')).toBeNull()
    expect(parseAddress('999.1.1.1')).toBeNull()
  })

  test('C52: TRUSTED_PROXIES takes addresses and CIDR ranges, IPv4 and IPv6; anything else stops the start naming it', () => {
    const { trustedProxies } = loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,::1' })
    expect(trustedProxies).toHaveLength(4)
    expect(clientKey('192.0.2.7', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('::ffff:192.0.2.7', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('192.0.2.8', '203.0.113.9', trustedProxies)).toBe('192.0.2.8')
    expect(clientKey('2001:db8:5::1', '203.0.113.9', trustedProxies)).toBe('203.0.113.9')
    expect(clientKey('2001:db9::1', '203.0.113.9', trustedProxies)).toBe('2001:db9:0:0::/64')
    expect(loadConfig({}).trustedProxies).toEqual([])
    for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/8/1', '::1/129', '10.0.0.0/']) {
      expect(() => loadConfig({ TRUSTED_PROXIES: `192.0.2.1, ${bad}` })).toThrow(
        new ConfigError(`TRUSTED_PROXIES must be a comma-separated list of IP addresses and CIDR ranges (10.0.0.0/8, 2001:db8::/32), not "${bad}".`),
      )
    }
  })

  test('C52: the quotas are off by default; the window is 60 s', () => {
    expect(loadConfig({})).toMatchObject({ rateLimitRequests: 0, rateLimitHeavy: 0, rateLimitWindowS: 60 })
    expect(loadConfig({ RATE_LIMIT_REQUESTS: '50', RATE_LIMIT_HEAVY: '5', RATE_LIMIT_WINDOW_S: '10' })).toMatchObject({ rateLimitRequests: 50, rateLimitHeavy: 5, rateLimitWindowS: 10 })
    expect(() => loadConfig({ RATE_LIMIT_WINDOW_S: '0' })).toThrow(new ConfigError('RATE_LIMIT_WINDOW_S must be a whole number from 1 to 86400, not "0".'))
    expect(() => loadConfig({ RATE_LIMIT_REQUESTS: '-1' })).toThrow(ConfigError)
  })
})

describe('C52: the token buckets', () => {
  test('C52: q units, refilled at q/w a second; r and t after each request; Retry-After until a unit is back', () => {
    const store = new TokenBuckets({ requests: 5, heavy: 2 }, 10)
    const buckets = store.of('a', 0)
    expect(store.state(buckets, 'requests', 0)).toEqual({ remaining: 5, fullInSeconds: 0 })
    for (let i = 0; i < 5; i++) expect(store.take(buckets, 'requests', 0)).toBe(true)
    expect(store.state(buckets, 'requests', 0)).toEqual({ remaining: 0, fullInSeconds: 10 })
    expect(store.take(buckets, 'requests', 0)).toBe(false)
    expect(store.secondsUntilUnit(buckets, 'requests', 0)).toBe(2)
    expect(store.take(buckets, 'requests', 1999)).toBe(false)
    expect(store.secondsUntilUnit(buckets, 'requests', 1999)).toBe(1)
    expect(store.take(buckets, 'requests', 2000)).toBe(true)
    expect(store.state(buckets, 'requests', 2000)).toEqual({ remaining: 0, fullInSeconds: 10 })
    expect(store.state(buckets, 'requests', 6000)).toEqual({ remaining: 2, fullInSeconds: 6 })
    expect(store.state(buckets, 'requests', 60_000)).toEqual({ remaining: 5, fullInSeconds: 0 })
    // The other quota is its own bucket.
    expect(store.state(buckets, 'heavy', 2000)).toEqual({ remaining: 2, fullInSeconds: 0 })
    store.giveBack(buckets, 'requests')
    expect(store.state(buckets, 'requests', 2000)).toEqual({ remaining: 1, fullInSeconds: 8 })
  })

  test('C52: memory stays bounded under 100 000 distinct addresses; an active client keeps its bucket, idle full ones are forgotten', () => {
    const store = new TokenBuckets({ requests: 10, heavy: 0 }, 60, 10_000)
    const active = store.of('203.0.113.1', 0)
    for (let i = 0; i < 10; i++) store.take(active, 'requests', 0)
    for (let i = 0; i < 100_000; i++) {
      store.take(store.of(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i / 1000), 'requests', i / 1000)
      if (i % 1000 === 0) {
        store.take(store.of('203.0.113.1', i / 1000), 'requests', i / 1000)
        expect(store.size).toBeLessThanOrEqual(10_000)
      }
    }
    expect(store.size).toBe(10_000)
    // The active client was never forgotten: its bucket is still spent.
    expect(store.take(store.of('203.0.113.1', 100), 'requests', 100)).toBe(false)
    // A window later every bucket is full: clients passing by sweep the idle ones away.
    for (let i = 0; i < 6000; i++) store.of(`192.0.2.${i % 200}`, 200_000)
    expect(store.size).toBeLessThan(300)

    // The default bound, with addresses that each came once.
    const defaults = new TokenBuckets({ requests: 10, heavy: 10 }, 60)
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 3 * MAX_CLIENTS; i++) {
      const buckets = defaults.of(`2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`, 0)
      defaults.take(buckets, 'requests', 0)
    }
    expect(defaults.size).toBe(MAX_CLIENTS)
    Bun.gc(true)
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(40 * 1024 * 1024)
  })
})
