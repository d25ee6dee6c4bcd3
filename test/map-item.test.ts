import { describe, expect, test } from 'bun:test'
import { formatTimestamp, mediaUrl } from '../src/content/map-item'
import { random } from './support/random'

/** C13 as formatTimestamp wrote it before it did the arithmetic itself (issue 45). */
const byDate = (unixSeconds: number) => `${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}+00:00`

/** The range the statements clamp timestamps to (epochSeconds): 0001-01-01T00:00:00 to 9999-12-31T23:59:59. */
const FIRST = -62_135_596_800
const LAST = 253_402_300_799

describe('C13: formatTimestamp', () => {
  test('the examples and the ends of the range', () => {
    expect(formatTimestamp(1_767_259_800)).toBe('2026-01-01T09:30:00+00:00')
    expect(formatTimestamp(0)).toBe('1970-01-01T00:00:00+00:00')
    expect(formatTimestamp(-1)).toBe('1969-12-31T23:59:59+00:00')
    expect(formatTimestamp(951_782_400)).toBe('2000-02-29T00:00:00+00:00')
    expect(formatTimestamp(FIRST)).toBe('0001-01-01T00:00:00+00:00')
    expect(formatTimestamp(LAST)).toBe('9999-12-31T23:59:59+00:00')
    // Outside what the statements send (whole seconds, clamped): as the Date formats it.
    for (const odd of [LAST + 1, FIRST - 1, 1.5, -0.25, 8.64e12]) expect(formatTimestamp(odd)).toBe(byDate(odd))
  })

  test('the same string as the Date it replaced: every day of a 400-year era, and random seconds of the whole range', () => {
    const rng = random(13)
    // The calendar repeats every 400 years: 1800-01-01 to 2199-12-31, each day at its start and at a random second.
    for (let day = -5_364_662_400; day < 7_258_118_400; day += 86_400) {
      const second = day + Math.floor(rng.next() * 86_400)
      if (formatTimestamp(second) !== byDate(second)) expect([second, formatTimestamp(second)]).toEqual([second, byDate(second)])
      if (formatTimestamp(day) !== byDate(day)) expect([day, formatTimestamp(day)]).toEqual([day, byDate(day)])
    }
    for (let run = 0; run < 50_000; run++) {
      const second = FIRST + Math.floor(rng.next() * (LAST - FIRST + 1))
      if (formatTimestamp(second) !== byDate(second)) expect([second, formatTimestamp(second)]).toEqual([second, byDate(second)])
    }
  })
})

describe('C15: mediaUrl', () => {
  test('one slash between the base and the path, whatever each brings; absolute URLs as they are', () => {
    expect(mediaUrl('uploads/cat.jpg', 'https://cms.example.com/media')).toBe('https://cms.example.com/media/uploads/cat.jpg')
    expect(mediaUrl('//uploads/cat.jpg', 'https://cms.example.com/media//')).toBe('https://cms.example.com/media/uploads/cat.jpg')
    expect(mediaUrl('HTTPS://elsewhere.example/a.png', 'https://cms.example.com/media')).toBe('HTTPS://elsewhere.example/a.png')
    // The trimmed base is kept between calls: another base is trimmed again.
    expect(mediaUrl('/a.jpg', 'http://other.example/')).toBe('http://other.example/a.jpg')
    expect(mediaUrl('a.jpg', 'https://cms.example.com/media')).toBe('https://cms.example.com/media/a.jpg')
    expect(mediaUrl('', '/')).toBe('/')
  })
})
