/**
 * `bun run bench:reads` (issue 35, C54): uncached list page 1 (CACHE=off) of a
 * 30 000-entry data set, side by side in one run, each service against the one
 * without callbacks: one trivial callback declaring `reads: []`, the
 * custom-fields example declaring what it reads (`fieldValues`), a typical
 * site (the custom-fields and reading-time examples: field values and the
 * translation shown, its body included), the same site with the reading time
 * taken from every translation (as before `shownTranslation`), the
 * custom-fields example without `reads`
 * (as before C54) and the trivial callback without `reads` (the whole model).
 * Targets: reads: [] ≥ 0.9, custom-fields declaring and the typical site ≥ 0.7
 * (issue 45). Then EXPLAIN (ANALYZE, BUFFERS) of the page's statement for each set
 * of parts the services load.
 *
 * DATABASE_URL: the server to build `vitrine_bench_30000` on (kept between
 * runs while its data set is unchanged); unset: the embedded PostgreSQL.
 * Each case is measured side by side with the site without callbacks (bench/load.ts's
 * `sideBySide`: each service first under load four times a measurement's length, unmeasured;
 * then rounds alternating which goes first); its ratio is the median of the rounds' own.
 * BENCH_SECONDS (default 10): each measurement takes ceil(BENCH_SECONDS / 4) s.
 * BENCH_ROUNDS (default 4).
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openReadPool } from '../src/db/connect'
import { listStatement } from '../src/content/list-statement'
import { MODEL_PARTS, type ModelPart } from '../src/hooks/extension'
import { ensureBenchDatabase } from './dataset'
import { explainPrepared } from './explain-list'
import { CONNECTIONS, LOAD_TOOL, median, ratioCells, readRounds, readSeconds, sideBySide, type Measure } from './load'
import { startBenchService, waitForStartChecks } from './service'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
/**
 * The reading-time example as it was before `shownTranslation`: it reads every language's row and picks the
 * one shown. It counts with `countWords` as the example does now, so that the row differs from the typical
 * site's by what the statement loads only.
 */
const READING_TIME_FROM_EVERY_TRANSLATION = `import { countWords, defineExtension, itemTranslation, t } from '#vitrine/extension'
export default defineExtension(({ addFilter }) => {
  addFilter('service/api/content-item', (data, content, context) => {
    const words = countWords(itemTranslation(content, context)?.body ?? '')
    return { ...data, reading_minutes: Math.max(1, Math.round(words / 200)) }
  }, { reads: ['translations'], schema: { add: { reading_minutes: t.Integer() } } })
})
`
const SECONDS = Math.max(1, Math.ceil(readSeconds(process.env.BENCH_SECONDS) / 4))
const ROUNDS = readRounds(process.env.BENCH_ROUNDS, 4)
/** How long each service is under load before it is first measured. */
const WARM_UP_SECONDS = 4 * SECONDS
const ENTRIES = 30_000
const PATH = '/api/v1/content/post'
const { config, target, admin, close } = await setUpBench()
const children: ReturnType<typeof Bun.spawn>[] = []
/** The extension folders made for the services, removed at the end. */
const folders: string[] = []

try {
  const { url, how } = await ensureBenchDatabase(admin, target.url, ENTRIES)
  console.log(`vitrine_bench_${ENTRIES}: ${how}.`)
  // [name, extensions folder, target ÷ no callbacks (issue 45, C54)]
  const services: [string, string, number?][] = [
    ['no callbacks', await extensionsDir({})],
    ["one trivial callback, reads: []", await extensionsDir({ 'trivial.ts': "import { defineExtension } from '#vitrine/extension'\nexport default defineExtension(({ addFilter }) => addFilter('service/api/content-item', (data) => data, { reads: [] }))\n" }), 0.9],
    ["custom-fields example, reads: ['fieldValues']", await customFieldsDir(true), 0.7],
    ["a typical site: custom-fields and reading-time examples, reads: ['fieldValues'] and ['shownTranslation']", await examplesDir(['custom-fields.ts', 'reading-time.ts']), 0.7],
    ["the same site, reading time from every translation: reads ['translations'] (before shownTranslation)", await examplesDir(['custom-fields.ts'], { 'reading-time.ts': READING_TIME_FROM_EVERY_TRANSLATION })],
    ['custom-fields example without reads (before C54)', await customFieldsDir(false)],
    ['one trivial callback without reads (before C54)', join(ROOT, 'bench', 'extensions')],
  ]
  const bases: string[] = []
  for (const [, dir] of services) bases.push(await startService(url, dir))
  await waitForStartChecks(admin, new URL(url).pathname.slice(1))
  // Each case side by side with the site without callbacks (alternating which goes first), each round's
  // ratio its own: the machine's drift between rounds (another engineer's tests) is left out of it.
  const warmed = new Set<string>()
  const rows: string[] = []
  for (const [index, [name, , target]] of services.entries()) {
    if (index === 0) continue
    const { ours, theirs, ratios } = await sideBySide(bases[index]! + PATH, bases[0]! + PATH, { rounds: ROUNDS, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS, warmed })
    const of = (measures: Measure[], key: keyof Measure) => median(measures.map((measure) => measure[key]))
    rows.push(`| ${name} | ${Math.round(of(ours, 'rps'))} | ${Math.round(of(theirs, 'rps'))} | ${of(ours, 'p50').toFixed(1)} | ${of(ours, 'p99').toFixed(1)} | ${ratioCells(ratios, target)} |`)
    console.log(rows.at(-1))
  }
  const table = [
    `| uncached list page 1 (CACHE=off, ${ENTRIES} entries, ${LOAD_TOOL} at ${CONNECTIONS} connections, ${SECONDS} s a measurement, ${ROUNDS} rounds alternating with no callbacks) | req/s | no callbacks req/s | p50 ms | p99 ms | ÷ no callbacks | rounds | target |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |',
    ...rows,
  ].join('\n')
  console.log(`\n${table}\n`)

  // The statement alone, as the service prepares it: what each set of parts costs the database.
  const connection = openReadPool(url, { ...config, databasePoolMax: 1 })
  const plans: [string, readonly ModelPart[] | null][] = [
    ['lean (no callbacks)', null],
    ['reads: []', []],
    ["reads: ['fieldValues']", ['fieldValues']],
    ["reads: ['fieldValues', 'shownTranslation']", ['fieldValues', 'shownTranslation']],
    ["reads: ['fieldValues', 'translations']", ['fieldValues', 'translations']],
    ['whole model', MODEL_PARTS],
  ]
  const explained: string[] = []
  for (const [name, model] of plans) {
    const { planningMs, executionMs, plan } = await explainPrepared(connection, listStatement(connection, { type: 'post', lang: undefined, limit: 20, start: { offset: 0 }, model }))
    const buffers = /Buffers: (.*)/.exec(plan.join('\n'))?.[1] ?? '?'
    explained.push(`| ${name} | ${planningMs} | ${executionMs} | ${buffers} |`)
  }
  await connection.end()
  const explainTable = ['| EXPLAIN (ANALYZE, BUFFERS), list page 1 statement | planning ms | execution ms (median of 5) | buffers (top node) |', '| --- | ---: | ---: | --- |', ...explained].join('\n')
  console.log(`${explainTable}\n`)
  await writeFile(join(ROOT, 'bench', 'declared-reads-last-run.md'), `${table}\n\n${explainTable}\n`)
} finally {
  for (const child of children) child.kill('SIGTERM')
  await Promise.all(children.map((child) => child.exited))
  await close()
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })))
}

/** A folder of extension files, as a site would install them. */
async function extensionsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vitrine-reads-'))
  folders.push(dir)
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text)
  return dir
}

/** Examples of src/hooks/examples installed side by side, as a site would (and `more` files beside them). */
async function examplesDir(names: string[], more: Record<string, string> = {}): Promise<string> {
  const dir = await extensionsDir(more)
  for (const name of names) await copyFile(join(ROOT, 'src', 'hooks', 'examples', name), join(dir, name))
  return dir
}

/** The custom-fields example installed as a site would, as it is (declaring) or with its `reads` taken out. */
async function customFieldsDir(declaring: boolean): Promise<string> {
  const example = join(ROOT, 'src', 'hooks', 'examples', 'custom-fields.ts')
  const dir = await extensionsDir({})
  if (declaring) {
    await copyFile(example, join(dir, 'custom-fields.ts'))
    return dir
  }
  const text = await readFile(example, 'utf8')
  const undeclared = text.replace("    reads: ['fieldValues'],\n", '').replace("DeclaredModel<['fieldValues']>", 'EntryModel').replace('type DeclaredModel', 'type EntryModel')
  if (undeclared === text) throw new Error('The custom-fields example no longer declares reads as this benchmark expects.')
  await writeFile(join(dir, 'custom-fields.ts'), undeclared)
  return dir
}

async function startService(databaseUrl: string, extensions: string): Promise<string> {
  const { base, process: child } = await startBenchService({ databaseUrl, env: { EXTENSIONS_DIR: extensions, CACHE: 'off' } })
  children.push(child)
  return base
}
