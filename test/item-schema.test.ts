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

describe('C31: a closed shape checked with a set of its keys', () => {
  test('the same answer, and the same message, as TypeBox checking the closed schema itself', async () => {
    const { TypeCompiler } = await import('@sinclair/typebox/compiler')
    const { changeItemSchema } = await import('../src/hooks/item-schema')
    const { Type } = await import('@sinclair/typebox')
    const shape = changeItemSchema(Item, { add: { reading_minutes: Type.Integer(), note: Type.Optional(Type.String()) }, remove: ['excerpt'] })
    const ours = compileMismatchFinder(shape)
    const theirs = TypeCompiler.Compile(shape)
    const item = { ...toItem({ ...row, author: { id: 3, name: 'Ada' }, terms: [{ id: 1, name: 'a', slug: 'a' }] }, 'https://cms.example.com/media'), reading_minutes: 2 }
    const { excerpt: _, ...withoutExcerpt } = item
    const bare = Object.assign(Object.create(null), item)
    const values: unknown[] = [
      item, withoutExcerpt, bare, null, [], 'item', 42,
      { ...item, extra: 1 }, { ...item, note: 'n' }, { ...item, note: undefined }, { ...item, note: 3 }, { ...item, alternates: undefined },
      { ...item, reading_minutes: undefined }, { ...item, reading_minutes: 1.5 }, { ...item, id: '1' }, { ...item, author: { id: 3, name: 'Ada', extra: true } },
      { ...item, terms: [{ id: 1, name: 'a', slug: 'a', taxonomy: 'x' }] }, Object.assign(Object.create(null), item, { constructor: 1 }), Object.assign(Object.create(null), item, { ['__proto__']: 1 }),
      Object.defineProperty({ ...item }, 'hidden', { value: 1, enumerable: false }), { ...item, [Symbol('s')]: 1 },
    ]
    for (const value of values) {
      const first = theirs.Check(value) ? undefined : theirs.Errors(value).First()
      expect(ours(value)).toBe(first ? `${first.path || '/'}: ${first.message}` : undefined)
    }
    // Every key required: TypeBox counts the own keys, so a key inherited rather than owned is judged by that count.
    const required = changeItemSchema(Item, { add: { alternates: Type.Array(Type.Any()), highlights: Type.Null() } })
    const { id: __, reading_minutes: ___, ...withoutId } = { ...item, alternates: [], highlights: null }
    const inherited = Object.assign(Object.create({ id: 1 }), withoutId)
    for (const value of [inherited, Object.assign(Object.create({ id: 1 }), withoutId, { extra: 1 }), { ...item, alternates: [], highlights: null }]) {
      const check = TypeCompiler.Compile(required)
      const first = check.Check(value) ? undefined : check.Errors(value).First()
      expect(compileMismatchFinder(required)(value)).toBe(first ? `${first.path || '/'}: ${first.message}` : undefined)
    }
    expect(compileMismatchFinder(required)(inherited)).toBeString()
    expect(ours({ ...item, extra: 1 })).toBeString()
    expect(ours(item)).toBeUndefined()
  })
})
