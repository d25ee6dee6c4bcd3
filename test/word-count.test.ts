import { describe, expect, test } from 'bun:test'
import { countWords } from '../src/hooks/extension'
import { random } from './support/random'

/** What countWords is documented to count, as the reading-time example counted before it (issue 45). */
const byExpression = (html: string) => html.replace(/<[^>]*>/g, ' ').match(/\S+/g)?.length ?? 0

describe('countWords, the word count extensions get from #vitrine/extension', () => {
  test('tags count as white space; a < with no > after it is text', () => {
    expect(countWords('')).toBe(0)
    expect(countWords('<p>Hello, <b>reader</b></p>')).toBe(2)
    expect(countWords('one<br/>two')).toBe(2)
    expect(countWords('one <a href="x y z">two</a>')).toBe(2)
    expect(countWords('3 < 4 and 5>2')).toBe(byExpression('3 < 4 and 5>2'))
    expect(countWords('a <unclosed tag')).toBe(3)
    // Linear: a million `<` and no `>` (the expression, and a search for `>` from each `<`, take quadratic time).
    expect(countWords('<'.repeat(1_000_000))).toBe(1)
    expect(countWords('\u00a0wide\u3000spaces\u2028and\ufefflines\n')).toBe(4)
  })

  test('the same count as the expression, for every UTF-16 code unit between two letters and for random HTML-like text', () => {
    for (let code = 0; code <= 0xffff; code++) {
      const text = `a${String.fromCharCode(code)}b`
      if (countWords(text) !== byExpression(text)) expect([code.toString(16), countWords(text)]).toEqual([code.toString(16), byExpression(text)])
    }
    const rng = random(45)
    const pieces = ['word', 'é', ' ', '\n', '\t', '\v', '\f', '\r', '<', '>', '</p>', '<br/>', '\u00a0', '\u1680', '\u2003', '\u200b', '\u2028', '\u202f', '\u3000', '\ufeff', '\u180e', '\u0085', '\ud83d\ude00']
    for (let run = 0; run < 20_000; run++) {
      let text = ''
      for (let length = Math.floor(rng.next() * 24); length > 0; length--) text += rng.pick(pieces)
      if (countWords(text) !== byExpression(text)) expect([text, countWords(text)]).toEqual([text, byExpression(text)])
    }
  })
})
