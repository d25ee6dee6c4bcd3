import { describe, expect, test } from 'bun:test'
import { basename, join } from 'node:path'

/**
 * The rules stand in the repository (issue 44): docs/rules.md states every
 * rule under a heading with its number, every number a test names is one of
 * them, every rule is named by a test, and a page of docs/ that states a
 * setting's default states the one docs/rules.md states.
 */
const ROOT = join(import.meta.dir, '..')
const rulesText = await Bun.file(join(ROOT, 'docs', 'rules.md')).text()

/** The rules of docs/rules.md, by number: `### C36: …` headings. */
const RULES = new Set([...rulesText.matchAll(/^### (C\d+): \S/gm)].map(([, number]) => number!))

/**
 * The files under `folder`. Bun.Glob does not enter dot folders: another test's scratch copy
 * (test/.generated-clients-*, in the other shard of `bun run test`) comes and goes meanwhile.
 */
async function filesUnder(folder: string, keep: (name: string) => boolean): Promise<string[]> {
  const found: string[] = []
  for await (const file of new Bun.Glob('**/*').scan({ cwd: join(ROOT, folder), onlyFiles: true })) if (keep(basename(file))) found.push(join(folder, file))
  return found.sort()
}

/** Every test file: `bun test`'s and the fault suite's. */
const TEST_FILES = await filesUnder('test', (name) => name.endsWith('.test.ts') || name.endsWith('.fault.ts'))

/** The rule numbers each test file names (`C19`, `C56/C36`), in tests' names or in comments beside them. */
const NAMED = new Map<string, Set<string>>()
for (const file of TEST_FILES) {
  const text = await Bun.file(join(ROOT, file)).text()
  for (const [number] of text.matchAll(/(?<![\w#-])C\d{1,3}(?!\w)/g)) {
    if (!NAMED.has(number)) NAMED.set(number, new Set())
    NAMED.get(number)!.add(file)
  }
}

describe('traceability: the rules and the tests that hold them', () => {
  test('docs/rules.md states C1 to C57, each once, each under a heading a link can point at', () => {
    const headings = [...rulesText.matchAll(/^### (C\d+): \S/gm)].map(([, number]) => number!)
    expect(new Set(headings).size).toBe(headings.length)
    expect([...RULES].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))).toEqual(Array.from({ length: 57 }, (_, index) => `C${index + 1}`))
  })

  test('every rule number a test names is a rule of docs/rules.md', () => {
    const unknown = [...NAMED].filter(([number]) => !RULES.has(number)).map(([number, files]) => `${number} (named in ${[...files].join(', ')})`)
    expect(unknown).toEqual([])
  })

  test('every rule of docs/rules.md is named by at least one test', () => {
    const untested = [...RULES].filter((number) => !NAMED.has(number))
    expect(untested).toEqual([])
  })

  test('nothing the repository ships points outside it (to the first specification files)', async () => {
    const files = [
      'README.md',
      ...(await filesUnder('docs', (name) => name.endsWith('.md'))),
      ...(await filesUnder('sql', (name) => name.endsWith('.md') || name.endsWith('.sql'))),
      ...(await filesUnder('src', (name) => /\.(ts|md|sql|html)$/.test(name))),
      ...(await filesUnder('test', (name) => name.endsWith('.ts'))),
    ]
    const outside: string[] = []
    for (const file of files) {
      const text = await Bun.file(join(ROOT, file)).text()
      for (const [index, line] of text.split('\n').entries()) {
        // The phrase itself, built from parts, so that this check does not find itself.
        if (line.includes(['..', 'shared'].join('/')) || /\bspec\/(contract|service|data-model)\.md/.test(line)) outside.push(`${file}:${index + 1}`)
      }
    }
    expect(outside).toEqual([])
  })
})

/**
 * A setting's default as a page states it: `NAME` (default 30), `NAME` defaults to `*`, `NAME`, 600 by
 * default, and docs/configuration.md's table (| `NAME` | `30` | …). Only what starts with a number, or is
 * on, off, true, false or *: a default in words ("one in eight of …") is left to the reader.
 */
function statedDefaults(text: string): Map<string, string> {
  const found = new Map<string, string>()
  const value = (raw: string): string | undefined => {
    const match = /^`?(\d[\d ,_]*(?:\.\d+)?|on|off|true|false|\*)`?(?![\w/.])/.exec(raw.trim())
    return match ? match[1]!.replace(/[ ,_]/g, '') : undefined
  }
  const patterns = [
    /`([A-Z][A-Z0-9_]{2,})` \(default:? ([^)]+)\)/g,
    /`([A-Z][A-Z0-9_]{2,})` defaults to ([^\s.;,]+)/g,
    /`([A-Z][A-Z0-9_]{2,})`, ([^\s]+) by default/g,
    /`([A-Z][A-Z0-9_]{2,})` = ([^\s]+) \(the default\)/g,
    /^\| `([A-Z][A-Z0-9_]{2,})` \| [^|\n]*?\bdefault:? ([^\s|]+)/gm,
    /^\| `([A-Z][A-Z0-9_]{2,})` \| ([^|]+) \|/gm,
  ]
  for (const pattern of patterns) {
    for (const [, name, raw] of text.matchAll(pattern)) {
      const stated = value(raw!)
      if (stated !== undefined && !found.has(name!)) found.set(name!, stated)
    }
  }
  return found
}

describe('the numbers of the rules are the numbers of the pages', () => {
  test('a default docs/rules.md states is the one every other page of docs/ states for that setting', async () => {
    const ruled = statedDefaults(rulesText)
    expect(ruled.size).toBeGreaterThanOrEqual(8)
    const differing: string[] = []
    let compared = 0
    for (const file of await filesUnder('docs', (name) => name.endsWith('.md') && name !== 'rules.md')) {
      for (const [name, stated] of statedDefaults(await Bun.file(join(ROOT, file)).text())) {
        if (!ruled.has(name)) continue
        compared++
        if (ruled.get(name) !== stated) differing.push(`${name}: docs/rules.md says ${ruled.get(name)}, ${file} says ${stated}`)
      }
    }
    expect(differing).toEqual([])
    expect(compared).toBeGreaterThanOrEqual(8)
  })
})
