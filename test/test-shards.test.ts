import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { dealFiles, fileTimesOf } from './support/shards'

/** `bun run test` (test/run.ts): the files dealt to its shards, and the times it records. */
describe('bun run test: the suite in shards', () => {
  test('files are dealt longest first, each to the shard with the least time so far', () => {
    const times = { 'a.test.ts': 40, 'b.test.ts': 30, 'c.test.ts': 20, 'd.test.ts': 15, 'e.test.ts': 5 }
    expect(dealFiles(Object.keys(times), times, 2)).toEqual([
      ['a.test.ts', 'd.test.ts'],
      ['b.test.ts', 'c.test.ts', 'e.test.ts'],
    ])
  })

  test('a file with no recorded time counts as the median; every file is dealt once', () => {
    const times = { 'a.test.ts': 1, 'b.test.ts': 10, 'c.test.ts': 100 }
    const files = ['a.test.ts', 'b.test.ts', 'c.test.ts', 'new.test.ts']
    const shards = dealFiles(files, times, 2)
    expect(shards).toEqual([['c.test.ts'], ['a.test.ts', 'b.test.ts', 'new.test.ts']])
    expect(dealFiles(files, times, 3).flat().sort()).toEqual(files)
    expect(dealFiles(['a.test.ts'], times, 4)).toEqual([['a.test.ts']])
  })

  test('files recorded at 0 s are spread too (a tie goes to the shard with fewer files); never more shards than files', () => {
    expect(dealFiles(['a.test.ts', 'b.test.ts', 'c.test.ts'], { 'a.test.ts': 0, 'b.test.ts': 0, 'c.test.ts': 0 }, 2)).toEqual([['a.test.ts', 'c.test.ts'], ['b.test.ts']])
    expect(dealFiles(['a.test.ts'], {}, 3)).toEqual([['a.test.ts']])
    // No file at all: one empty shard, which the runner does not start (`bun test` with no file runs them all).
    expect(dealFiles([], {}, 2)).toEqual([[]])
  })

  test("a file's time is its own testsuite's in bun's JUnit report, not a describe's", () => {
    const report = [
      '<testsuites>',
      '  <testsuite name="test/a.test.ts" file="test/a.test.ts" tests="3" assertions="5" failures="0" skipped="0" time="12.834379252" hostname="vm">',
      '    <testsuite name="a describe" file="test/a.test.ts" line="21" tests="2" assertions="4" failures="0" skipped="0" time="6.934" hostname="vm">',
      '  <testsuite name="test/b.test.ts" file="test/b.test.ts" tests="1" assertions="1" failures="0" skipped="0" time="0.04" hostname="vm">',
    ].join('\n')
    expect(fileTimesOf([report])).toEqual({ 'test/a.test.ts': 12.8, 'test/b.test.ts': 0 })
  })

  test('the recorded times hold both kinds of database, each file a number of seconds', async () => {
    const recorded = (await Bun.file(join(import.meta.dir, 'support', 'file-times.json')).json()) as Record<string, Record<string, number>>
    expect(Object.keys(recorded).sort()).toEqual(['embedded', 'server'])
    for (const times of Object.values(recorded)) {
      expect(Object.keys(times).length).toBeGreaterThan(40)
      for (const seconds of Object.values(times)) expect(seconds).toBeGreaterThanOrEqual(0)
    }
  })
})
