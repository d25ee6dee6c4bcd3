/**
 * `bun run test:mutants [word …] [--jobs N]`: does the suite catch the
 * regressions of ./mutants.ts? Each one is applied to its own temporary copy
 * of the repository, and only the test files that must catch it run there. A
 * mutant is caught when a test fails; it survives when they all pass. First,
 * those files run once on an unmutated copy: a failure there would make every
 * mutant look caught.
 *
 * No `--bail`: bun then exits without its afterAll hooks (and without exit
 * handlers), so every caught mutant left its embedded PostgreSQL running. Each
 * run also gets a TMPDIR of its own, and a PostgreSQL still running there
 * afterwards is stopped and reported.
 *
 * With words, only the mutants whose id or regression contains one of them run.
 * TEST_DATABASE_URL is passed on, as to any `bun test`. Exit status: 0 when
 * every mutant is caught, 1 when one survives or breaks the code, 2 when an
 * edit no longer applies (the code moved: update ./mutants.ts).
 */
import { chmod, cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { MUTANTS, type Mutant } from './mutants'

const ROOT = join(import.meta.dir, '..', '..')
/** Not copied: the copy links the dependencies, and has no use for history, data or artifacts. */
const LEFT_OUT = new Set(['node_modules', '.git', '.data', 'artifacts'])
/** A test that hangs under a mutant (a callback that never settles) fails after this instead of bun's 30 s. */
const TEST_TIMEOUT_MS = 10_000

interface Outcome {
  mutant: Mutant
  result: 'caught' | 'survived' | 'broken'
  /** The first failing test, or the end of the output when no test could run. */
  detail: string
  seconds: number
}

/** PostgreSQL clusters a run left running (a test harness bug): stopped, and reported at the end. */
const leftRunning: string[] = []

const { words, jobs } = readArguments(process.argv.slice(2))
const selected = MUTANTS.filter((mutant) => words.length === 0 || words.some((word) => `${mutant.id} ${mutant.regression}`.includes(word)))
if (selected.length === 0) fail(2, `No mutant matches ${words.join(', ')}.`)

const stale = await staleEdits(selected)
if (stale.length) {
  fail(2, ['These edits no longer apply: the code moved. Update them in test/mutants/mutants.ts (keep the regression they stand for):', ...stale].join('\n'))
}

const started = performance.now()
const files = [...new Set(selected.flatMap((mutant) => mutant.tests))].sort()
console.log(`Unmutated first: ${files.join(' ')}`)
const baseline = await runInCopy(files)
if (baseline.code !== 0) fail(2, `The tests fail without any mutant, so no mutant could be told caught:\n${tail(baseline.output)}`)
console.log(`  pass (${baseline.seconds.toFixed(1)} s)\n`)

console.log(`${selected.length} mutants, ${jobs} at a time:`)
const outcomes = await inParallel(selected, jobs, async (mutant) => {
  const outcome = await runMutant(mutant)
  console.log(`  ${outcome.result.padEnd(8)} ${mutant.id} (${outcome.seconds.toFixed(1)} s)`)
  return outcome
})
// A run that broke before any test judged it is run again, alone: an edit that does not compile
// breaks again, while two runs at once can collide (two replica tests' base backups of one server
// did, once in a whole run). A mutant is never counted caught without a test that failed.
for (const [index, outcome] of outcomes.entries()) {
  if (outcome.result !== 'broken') continue
  const again = await runMutant(outcome.mutant)
  console.log(`  ${again.result.padEnd(8)} ${outcome.mutant.id} (${again.seconds.toFixed(1)} s, run again alone after it broke)`)
  outcomes[index] = again
}
report(outcomes, (performance.now() - started) / 1000)
if (leftRunning.length) console.log(`\nThese test runs left a PostgreSQL running; it was stopped:\n${leftRunning.join('\n')}`)
process.exit(outcomes.every((outcome) => outcome.result === 'caught') && leftRunning.length === 0 ? 0 : 1)

function readArguments(args: string[]): { words: string[]; jobs: number } {
  const at = args.indexOf('--jobs')
  const jobs = at === -1 ? 2 : Number(args[at + 1])
  if (!Number.isInteger(jobs) || jobs < 1) fail(2, '--jobs takes a whole number of at least 1.')
  return { words: args.filter((_, index) => at === -1 || (index !== at && index !== at + 1)), jobs }
}

/** The edits whose `find` no longer occurs exactly once, each as a line that says where and what to do. */
async function staleEdits(mutants: Mutant[]): Promise<string[]> {
  const problems: string[] = []
  for (const mutant of mutants) {
    for (const [index, edit] of mutant.edits.entries()) {
      const text = await readFile(join(ROOT, edit.file), 'utf8').catch(() => undefined)
      const count = text === undefined ? -1 : text.split(edit.find).length - 1
      if (count === 1) continue
      const why = count === -1 ? `${edit.file} does not exist` : count === 0 ? `its text is no longer in ${edit.file}` : `its text occurs ${count} times in ${edit.file}: make \`find\` longer`
      problems.push(`  ${mutant.id}, edit ${index + 1} (${mutant.regression}): ${why}`)
    }
  }
  return problems
}

async function runMutant(mutant: Mutant): Promise<Outcome> {
  const run = await runInCopy(mutant.tests, async (copy) => {
    for (const edit of mutant.edits) {
      const path = join(copy, edit.file)
      const text = await readFile(path, 'utf8')
      await writeFile(path, text.replace(edit.find, () => edit.replace))
    }
  })
  const failed = /^\(fail\) (.+?)(?: \[[\d.]+m?s\])?$/m.exec(run.output)?.[1]
  if (run.code === 0) return { mutant, result: 'survived', detail: 'every test passed', seconds: run.seconds }
  if (failed) return { mutant, result: 'caught', detail: failed, seconds: run.seconds }
  return { mutant, result: 'broken', detail: tail(run.output), seconds: run.seconds }
}

/** Copies the repository to a temporary folder, lets `change` edit it, and runs `bun test` on `files` there. */
async function runInCopy(files: string[], change?: (copy: string) => Promise<void>) {
  const copy = await mkdtemp(join(tmpdir(), 'vitrine-mutant-'))
  // The run's own TMPDIR, outside the copy (tests put folders "outside the repository" there).
  // The embedded PostgreSQL runs as another user when we are root: it must reach its folder.
  const temporary = await mkdtemp(join(tmpdir(), 'vitrine-mutant-tmp-'))
  await chmod(temporary, 0o755)
  const started = performance.now()
  try {
    await cp(ROOT, copy, { recursive: true, filter: (source) => !LEFT_OUT.has(basename(source)) })
    await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
    await change?.(copy)
    const child = Bun.spawn(['bun', 'test', '--timeout', String(TEST_TIMEOUT_MS), ...files.map((file) => `./${file}`)], {
      cwd: copy,
      env: { ...process.env, TMPDIR: temporary },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
    return { code, output: `${stdout}\n${stderr}`, seconds: (performance.now() - started) / 1000 }
  } finally {
    await stopLeftoverDatabases(temporary)
    await rm(copy, { recursive: true, force: true })
    await rm(temporary, { recursive: true, force: true })
  }
}

/** Stops every PostgreSQL whose data folder lies under `folder` (its postmaster.pid names it) and waits for it to exit. */
async function stopLeftoverDatabases(folder: string): Promise<void> {
  for await (const pidFile of new Bun.Glob('**/postmaster.pid').scan({ cwd: folder, absolute: true, dot: true })) {
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0])
    const dataDir = join(pidFile, '..')
    const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    if (!pid || !command.includes(dataDir)) continue
    leftRunning.push(`  ${dataDir} (pid ${pid})`)
    process.kill(pid, 'SIGQUIT')
    while (await readFile(`/proc/${pid}/cmdline`, 'utf8').then(() => true, () => false)) await Bun.sleep(20)
  }
}

async function inParallel<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index])
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

function report(outcomes: Outcome[], seconds: number) {
  console.log('\n| mutant | regression | result | caught by | s |\n| --- | --- | --- | --- | ---: |')
  for (const { mutant, result, detail, seconds } of outcomes) {
    const by = result === 'caught' ? detail : ''
    console.log(`| ${mutant.id} | ${mutant.regression} | ${result.toUpperCase()} | ${by} | ${seconds.toFixed(1)} |`)
  }
  for (const { mutant, result, detail } of outcomes.filter((outcome) => outcome.result === 'broken')) {
    console.log(`\n${mutant.id} broke the code before any test could judge it (${result}); fix its edit:\n${detail}`)
  }
  const count = (result: Outcome['result']) => outcomes.filter((outcome) => outcome.result === result).length
  console.log(`\n${count('caught')} caught, ${count('survived')} survived, ${count('broken')} broken, in ${seconds.toFixed(0)} s.`)
}

function tail(output: string): string {
  return output.trim().split('\n').slice(-25).join('\n')
}

function fail(code: number, message: string): never {
  console.error(`test:mutants: ${message}`)
  process.exit(code)
}
