import { afterAll, describe, expect, test } from 'bun:test'
import { findStatement } from '../src/content/entry-statement'
import { composeList, listStatement } from '../src/content/list-statement'
import type { ListOptions } from '../src/content/list-pages'
import { flatten, StatementTexts } from '../src/db/statement-text'
import { createTestDatabase } from './support/database'

const db = await createTestDatabase()
afterAll(async () => {
  await db.sql.end()
})

describe('issue 45: statements flattened once per shape', () => {
  test('a flattened statement has the text and parameters postgres.js builds from its fragments', async () => {
    const texts = new StatementTexts<{ type: string; lang: string | undefined; slug: string | null }>(['type', 'lang', 'slug'])
    for (const options of [
      { type: 'post', lang: 'fr', slug: 'bonjour' },
      { type: 'post', lang: undefined, slug: null, model: ['translations', 'terms'] as const, alternates: true, highlights: true },
    ]) {
      const composed = findStatement(db.sql, options)
      const flattened = texts.run(db.sql, JSON.stringify(options), (value) => findStatement(db.sql, { ...options, ...value }), options)
      // describe() has the driver build each statement's text and parameters, as it sends them.
      const [fromFragments, fromTemplate] = (await Promise.all([composed.describe(), flattened.describe()])) as unknown as { string: string }[]
      expect(fromTemplate!.string).toBe(fromFragments!.string)
      expect((flattened as unknown as { parameters: unknown[] }).parameters).toEqual((composed as unknown as { parameters: unknown[] }).parameters)
      expect(flatten(composed).strings.length).toBe(flatten(composed).parameters.length + 1)
    }
  })

  test('the list statement, flattened per shape and way in, has the text and parameters of its fragments, each time with its own values', async () => {
    const starts: ListOptions['start'][] = [{ offset: 0 }, { offset: 40 }, { after: { publishedAt: { seconds: 1_767_259_800, microseconds: 250 }, id: 7 } }, { after: { publishedAt: { seconds: -Infinity, microseconds: 0 }, id: 9 } }, { after: { publishedAt: null, id: 12 } }]
    // Each of these differs from the first in one thing the text depends on: a shape key missing it would give them the first's text.
    const shapes: Partial<ListOptions>[] = [{}, { model: [] }, { model: ['terms'] }, { alternates: true }, { highlights: true }, { countByScan: true }, { readGoLive: false }, { lang: 'fr', model: ['fieldValues', 'shownTranslation'], alternates: true, highlights: true, countByScan: true, readGoLive: false }]
    for (const shape of shapes) {
      for (const [index, start] of starts.entries()) {
        const options: ListOptions = { type: index % 2 ? 'page' : 'post', lang: undefined, limit: 10 + index, start, ...shape }
        const flattened = listStatement(db.sql, options)
        const composed = composeList(db.sql, options, { type: options.type, lang: options.lang, limit: options.limit, rows: options.limit + 1 }, start)
        const [fromTemplate, fromFragments] = (await Promise.all([flattened.describe(), composed.describe()])) as unknown as { string: string }[]
        expect(fromTemplate!.string).toBe(fromFragments!.string)
        expect((flattened as unknown as { parameters: unknown[] }).parameters).toEqual((composed as unknown as { parameters: unknown[] }).parameters)
      }
    }
  })

  test('C50: a flattened statement nests in another as its fragments did (a replica wraps every read)', async () => {
    const texts = new StatementTexts<{ a: string }>(['a'])
    const inner = texts.run(db.sql, 'nested', (value) => db.sql<{ a: string }[]>`select ${value.a}::text as a, ${db.sql`${2}::int`} as two`, { a: 'x' })
    expect([...(await db.sql`select answer.*, ${'y'}::text as b from (${inner}) as answer`)]).toEqual([{ a: 'x', two: 2, b: 'y' }])
  })

  test('each run sends its own values, in every place the statement holds them, and absent values as null', async () => {
    const texts = new StatementTexts<{ a: string; b: number | undefined }>(['a', 'b'])
    const compose = (value: { a: string; b: number | undefined }) => db.sql<{ a: string; again: string; b: number | null; fixed: number }[]>`select ${value.a}::text as a, ${value.a}::text as again, ${value.b ?? null}::int as b, ${db.sql`${7}::int`} as fixed`
    expect([...(await texts.run(db.sql, 'one', compose, { a: 'x', b: 1 }))]).toEqual([{ a: 'x', again: 'x', b: 1, fixed: 7 }])
    expect([...(await texts.run(db.sql, 'one', compose, { a: 'y', b: undefined }))]).toEqual([{ a: 'y', again: 'y', b: null, fixed: 7 }])
  })

  test('a value the text does not hold is refused: it would be sent as whatever stood in its place', () => {
    const texts = new StatementTexts<{ a: string; b: string }>(['a', 'b'])
    // Spread, not read by name: the stand-in of b never reaches the text.
    expect(() => texts.run(db.sql, 'lost', (value) => db.sql`select ${{ ...value, b: 'baked' }.b}, ${value.a}`, { a: 'x', b: 'y' })).toThrow('does not hold b')
  })

  test('a statement with a helper is refused, not flattened wrong', () => {
    expect(() => flatten(db.sql`select * from ${db.sql('entries')}`)).toThrow('not flattened')
    expect(() => flatten({})).toThrow('Not a statement')
  })
})
