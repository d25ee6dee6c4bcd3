/**
 * `bun run test`: the whole suite, in TEST_SHARDS `bun test` processes at
 * once (default 2; 1 on a one-core machine). Most of a run is waiting (a
 * retry's 5 s, a go-live's second, Chromium, a standby catching up): one
 * process keeps a 2-core machine about 70% busy; two take about 70% of its
 * time (docs/testing.md). Each shard is a plain `bun test`
 * of its files, with the preload's own PostgreSQL (an embedded cluster, or
 * its own databases on TEST_DATABASE_URL's server), so the shards share
 * nothing but the machine. Files are dealt to the shards by their last
 * recorded times on this kind of database (./support/file-times.json:
 * `embedded`, or `server` with TEST_DATABASE_URL; a file's time differs
 * between them), longest first, each to the shard with the least so far; a
 * file not recorded counts as the median.
 *
 * Each line a shard prints is prefixed with its number (`[2] (pass) …`);
 * the run ends with every shard's counts and the total. Exit status: 0 when
 * every shard passed, else 1 (2 for a bad TEST_SHARDS or arguments; 128 + the
 * signal's number when a SIGTERM or SIGHUP stopped it: it passes them on to
 * the shards and waits for them).
 *
 * - `bun run test FILE… | -t NAME …`: anything given is handed to one plain
 *   `bun test` as it is (a file, a filter).
 * - `bun run test --record-times` (alone): the whole suite, then the files'
 *   times written to ./support/file-times.json for this kind of database
 *   when every shard passed (commit it when files were added or moved a lot).
 * @example TEST_SHARDS=1 bun run test
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { dealFiles, fileTimesOf } from './support/shards'

const ROOT = join(import.meta.dir, '..')
const TIMES_FILE = join(import.meta.dir, 'support', 'file-times.json')
/**
 * A hook's budget as a test's (30 s, the preload's setDefaultTimeout): Bun 1.4.5 gives hooks 5 s
 * whatever setDefaultTimeout or bunfig.toml say, and only `--timeout` reaches them. With two shards on
 * two cores a beforeAll that makes a database and 1 300 entries on the server took more than 5 s.
 * Not added when the arguments hold a `--timeout` of their own (with two, bun took the larger).
 */
const HOOK_TIMEOUT = ['--timeout', '30000']

/** The `bun test` processes running now: told when the runner is told to stop. */
const children = new Set<Subprocess>()
// A terminal's Ctrl-C reaches every process of the group, the shards too; a SIGTERM or SIGHUP
// (a CI job cancelled, `timeout`) reaches the runner alone: it passes them on and waits for the shards.
let stoppedBy: number | null = null
for (const [signal, number] of [['SIGTERM', 15], ['SIGHUP', 1]] as const) {
  process.on(signal, () => {
    stoppedBy = number
    for (const child of children) child.kill(signal)
  })
}

// The exit status is set, not forced: process.exit() would drop output still buffered for a slow reader (a pager, tee).
process.exitCode = await main(process.argv.slice(2))
if (stoppedBy !== null) process.exitCode = 128 + stoppedBy

async function main(args: string[]): Promise<number> {
  const record = args.includes('--record-times')
  const passed = args.filter((arg) => arg !== '--record-times')
  if (record && passed.length > 0) {
    process.stderr.write('--record-times records a whole run: it takes no other argument.\n')
    return 2
  }
  if (passed.length > 0) {
    const timeout = passed.some((arg) => arg === '--timeout' || arg.startsWith('--timeout=')) ? [] : HOOK_TIMEOUT
    const child = Bun.spawn([process.execPath, 'test', ...timeout, ...passed], { cwd: ROOT, stdio: ['inherit', 'inherit', 'inherit'] })
    children.add(child)
    return child.exited
  }

  const shardCount = readShards(process.env.TEST_SHARDS)
  if (shardCount === null) return 2
  const files = await testFiles()
  const kind = process.env.TEST_DATABASE_URL ? 'server' : 'embedded'
  const recorded = JSON.parse(await readFile(TIMES_FILE, 'utf8')) as Partial<Record<'embedded' | 'server', Record<string, number>>>
  // A shard with no files is not started: `bun test` with no file runs them all.
  const shards = dealFiles(files, recorded[kind] ?? {}, shardCount).filter((shard) => shard.length > 0)
  const reports = record ? await mkdtemp(join(tmpdir(), 'vitrine-test-times-')) : null
  const started = performance.now()
  const outcomes = await Promise.all(shards.map((shard, index) => runShard(shard, index + 1, reports)))
  const seconds = (performance.now() - started) / 1000
  const passedAll = outcomes.every((outcome) => outcome.code === 0)

  const lines = [`\n${'-'.repeat(60)}`]
  for (const outcome of outcomes) lines.push(`shard ${outcome.number}/${shards.length}: ${outcome.files} files, ${outcome.pass} pass, ${outcome.fail} fail, exit ${outcome.code}, ${outcome.seconds.toFixed(1)} s`)
  const total = outcomes.reduce((sum, outcome) => ({ pass: sum.pass + outcome.pass, fail: sum.fail + outcome.fail }), { pass: 0, fail: 0 })
  lines.push(`${total.pass} pass, ${total.fail} fail across ${files.length} files in ${seconds.toFixed(1)} s (${shards.length} shards)${passedAll ? '' : ': a shard failed'}`)
  if (reports) {
    if (passedAll) await writeFile(TIMES_FILE, `${JSON.stringify({ ...recorded, [kind]: await recordedTimes(reports) }, null, 2)}\n`)
    else lines.push('The recorded times are left as they were.')
    await rm(reports, { recursive: true, force: true })
  }
  // Through the same stream as the shards' lines, after them.
  process.stdout.write(`${lines.join('\n')}\n`)
  return passedAll ? 0 : 1
}

/** TEST_SHARDS, a whole number from 1 to 16; unset, 2 (1 on a one-core machine); null (said why) when it is not one. */
function readShards(value: string | undefined): number | null {
  if (value === undefined || value === '') return Math.min(2, availableParallelism())
  const shards = Number(value)
  if (Number.isInteger(shards) && shards >= 1 && shards <= 16) return shards
  process.stderr.write(`TEST_SHARDS must be a whole number from 1 to 16, not ${JSON.stringify(value)}.\n`)
  return null
}

/** The files `bun test` finds with no argument: every `*.test.ts` outside node_modules and dot folders. */
async function testFiles(): Promise<string[]> {
  const found: string[] = []
  for await (const file of new Bun.Glob('**/*.test.ts').scan({ cwd: ROOT })) if (!file.startsWith('node_modules/')) found.push(file)
  return found.sort()
}

interface ShardOutcome {
  number: number
  files: number
  code: number
  pass: number
  fail: number
  seconds: number
}

/** One `bun test` of the shard's files, its lines prefixed as they come. */
async function runShard(files: string[], number: number, reports: string | null): Promise<ShardOutcome> {
  const started = performance.now()
  const report = reports ? ['--reporter=junit', `--reporter-outfile=${join(reports, `shard-${number}.xml`)}`] : []
  const child = Bun.spawn([process.execPath, 'test', ...HOOK_TIMEOUT, ...report, ...files.map((file) => `./${file}`)], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  children.add(child)
  const counts = { pass: 0, fail: 0 }
  const read = (stream: ReadableStream<Uint8Array>, to: NodeJS.WriteStream) =>
    forEachLine(stream, (line) => {
      // bun test's summary: " 329 pass", " 0 fail".
      const summary = /^\s*(\d+) (pass|fail)$/.exec(line)
      if (summary) counts[summary[2] as 'pass' | 'fail'] = Number(summary[1])
      to.write(`[${number}] ${line}\n`)
    })
  await Promise.all([read(child.stdout, process.stdout), read(child.stderr, process.stderr)])
  const code = await child.exited
  children.delete(child)
  return { number, files: files.length, code, ...counts, seconds: (performance.now() - started) / 1000 }
}

/** Calls `each` with every whole line of `stream`, and the last one even without its newline. */
async function forEachLine(stream: ReadableStream<Uint8Array>, each: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let rest = ''
  for await (const chunk of stream) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n')
    rest = lines.pop()!
    for (const line of lines) each(line)
  }
  rest += decoder.decode()
  if (rest) each(rest)
}

/** Each file's time from the shards' JUnit reports. */
async function recordedTimes(reports: string): Promise<Record<string, number>> {
  const reads = [...new Bun.Glob('*.xml').scanSync(reports)].map((name) => readFile(join(reports, name), 'utf8'))
  return fileTimesOf(await Promise.all(reads))
}
