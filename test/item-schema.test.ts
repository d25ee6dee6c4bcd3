import { describe, expect, test } from 'bun:test'
// Elysia first, as the service loads it: its own lenient date-time must not be the one that checks.
import 'elysia'
import { compileMismatchFinder } from '../src/hooks/item-schema'
import { Item } from '../src/content/schemas'
import { toItem } from '../src/content/map-item'

/*
 * C31 / C13: a callback's output is checked against its declared shape, timestamps as RFC 3339
 * date-times, whichever module loaded first. The check remembers the values it found valid (issue 45): the same answers, first
 * time or hundredth, and a flood of distinct values changes none of them.
 */

const row = { id: 1, published_at: 1767259800, position: '1767259800', created_at: 1767259800, author: null, translation: null, image: null, terms: [] }

describe('C31: the declared shape, timestamps included', () => {
  test('a valid item passes every time; a timestamp that is not a date-time fails every time, whatever was checked before', () => {
    const mismatch = compileMismatchFinder(Item)
    const item = toItem(row, 'https://cms.example.com/media')
    const wrong = ['2026-01-01 09:30:00', '2026-13-01T09:30:00+00:00', 'not a date', '2026-01-01T09:30:00+00:00trailing']
    for (let round = 0; round < 3; round++) {
      expect(mismatch(item)).toBeUndefined()
      for (const published_at of wrong) expect(mismatch({ ...item, published_at })).toStartWith('/published_at')
    }
    // More distinct valid values than the check remembers: it starts over, and answers the same.
    for (let second = 0; second < 12_000; second++) expect(mismatch({ ...item, created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString().replace('.000Z', '+00:00') })).toBeUndefined()
    for (const published_at of wrong) expect(mismatch({ ...item, published_at })).toStartWith('/published_at')
    expect(mismatch(item)).toBeUndefined()
  })
})
