/**
 * The words of an HTML body, for extensions (`#vitrine/extension`): runs of
 * characters other than white space, each tag (`<` to the next `>`) counting
 * as white space. The same count as
 * `html.replace(/<[^>]*>/g, ' ').match(/\S+/g)?.length ?? 0`, in one pass
 * over the characters that makes no string and no array: a callback runs on
 * every item of every page it is not kept for, and that expression built a
 * copy of the body and an array of all its words each time, which cost a site
 * with a reading time 4-13% of its uncached list pages (issue 45).
 * @example countWords('<p>Hello, <b>reader</b></p>') // 2
 */
export function countWords(html: string): number {
  let words = 0
  let inWord = false
  // Once no `>` follows, every `<` after is text: not looked for again (a body of `<`s stays linear).
  let closes = true
  for (let at = 0; at < html.length; at++) {
    const code = html.charCodeAt(at)
    if (code === LESS_THAN && closes) {
      // A `<` with no `>` after it is text, as in the expression.
      const end = html.indexOf('>', at + 1)
      if (end !== -1) {
        at = end
        inWord = false
        continue
      }
      closes = false
    }
    if (isSpace(code)) inWord = false
    else if (!inWord) {
      inWord = true
      words++
    }
  }
  return words
}

const LESS_THAN = 0x3c

/** Whether a UTF-16 code unit is one that `\s` matches in a JavaScript regular expression (white space and line terminators). */
function isSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d)
  if (code < 0xa0) return false
  return code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff
}
