/**
 * `bun run bench:chain-steps` (issue 45, C54): what each step of an uncached list page costs the
 * service's process, in process and without HTTP, for one callback declaring `reads: []` against
 * none. List page 1 of `post` on `vitrine_bench_30000` (the data set of `bun run bench:reads`) is
 * loaded once, with the model the callback's declaration asks for; each step then runs
 * BENCH_CHAIN_CALLS times (default 3 000) a round, in turn, and its CPU time
 * (`process.cpuUsage()`, user and system) is divided by the calls. Medians of BENCH_ROUNDS (default
 * 5), in µs a page of 20 items.
 *
 * BENCH_CHAIN_EXTENSIONS: extension files, comma-separated, to measure instead of that callback
 * (`src/hooks/examples/custom-fields.ts,src/hooks/examples/reading-time.ts`: a typical site).
 *
 * Both paths map the rows to items and render the page; only the callback's path builds the models
 * (C25, with their declared-reads views, C54) and runs the chain (C24, C31's check of each output,
 * C27's key order, C53's timing).
 * DATABASE_URL: the server (unset: the embedded PostgreSQL).
 */
import { envelope, loadListAnswer, render, type ContentAnswer } from '../src/content/content-answer'
import { selectFields, toItem } from '../src/content/map-item'
import type { EntryRow } from '../src/content/statement-fragments'
import { connectDatabase } from '../src/db/connect'
import { applyItemFilters } from '../src/hooks/apply-item-filters'
import { createFilterContext } from '../src/hooks/context'
import { deepFreeze, modelsFor, toEntryModel } from '../src/hooks/model'
import { loadExtensionFiles } from '../src/hooks/loader'
import { FilterRegistry } from '../src/hooks/registry'
import { ensureBenchDatabase } from './dataset'
import { median, readRounds } from './load'
import { setUpBench } from './setup'

const CALLS = Number(process.env.BENCH_CHAIN_CALLS ?? 3000)
if (!Number.isInteger(CALLS) || CALLS < 1) {
  console.error(`bench: BENCH_CHAIN_CALLS must be a whole number, at least 1, not "${process.env.BENCH_CHAIN_CALLS}".`)
  process.exit(2)
}
const ROUNDS = readRounds(process.env.BENCH_ROUNDS, 5)
/** Extension files to run instead of the one callback declaring `reads: []`, comma-separated (a typical site: the custom-fields and reading-time examples). */
const EXTENSIONS = process.env.BENCH_CHAIN_EXTENSIONS
const MEDIA = 'https://cms.example.com/media'
const PUBLIC_URL = 'https://cms.example.com'

const { admin, target, close } = await setUpBench()
try {
  const database = await ensureBenchDatabase(admin, target.url, 30_000)
  const sql = connectDatabase(database.url, { max: 1 })
  try {
    const registry = EXTENSIONS ? await loadExtensionFiles(EXTENSIONS.split(',')) : new FilterRegistry()
    if (!EXTENSIONS) registry.add('service/api/content-item', (data) => data, { reads: [] })
    const loaded = await loadListAnswer({ sql, mediaBaseUrl: MEDIA, model: registry.modelParts, timeoutMs: 10_000, type: 'post', lang: undefined, publicUrl: PUBLIC_URL, perPage: 20, start: { page: 1, cursor: null } })
    const answer: ContentAnswer = loaded.value
    const rows: EntryRow[] = answer.rows
    const request = new Request(`${PUBLIC_URL}/api/v1/content/post`)
    const run = { timeoutMs: 1000, onSchemaMismatch: () => {} }
    const items = () => rows.map((row) => toItem(row, MEDIA))
    const context = () => createFilterContext(request, { language: 'en', defaultLanguage: 'en', route: 'service.api.content.index', publicUrl: PUBLIC_URL })
    const models = modelsFor(registry.filters, rows, items(), MEDIA)
    const mapped = items()
    const chained = await applyItemFilters(registry, items(), models, context(), run)
    // A callback without `reads` reads the whole model: it has no view (modelsFor shares the models with it).
    const views = registry.filters.map((filter) => filter.viewOf)
    const built = () => rows.map((row, index) => toEntryModel(row, mapped[index]!, MEDIA))
    const builtModels = built().map(deepFreeze)
    const steps: [string, () => unknown][] = [
      ['both: the rows mapped to items (toItem)', items],
      ['both: the page rendered (JSON, bytes, ETag)', () => render(envelope(selectFields(mapped, null), answer.meta))],
      ['callback: the models built (toEntryModel)', built],
      ['callback: … and frozen (deepFreeze, C25)', () => built().map(deepFreeze)],
      ['callback: the declared-reads views (C54)', () => views.map((view) => (view === null ? builtModels : builtModels.map(view)))],
      ['callback: modelsFor, all of the above', () => modelsFor(registry.filters, rows, mapped, MEDIA)],
      ['callback: the request context', context],
      ['callback: the chain (applyItemFilters)', () => applyItemFilters(registry, mapped, models, context(), run)],
      ['callback: its output rendered', () => render(envelope(selectFields(chained, null), answer.meta))],
    ]
    const times = new Map(steps.map(([name]) => [name, [] as number[]]))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, step] of steps) {
        const before = process.cpuUsage()
        for (let call = 0; call < CALLS; call++) {
          const result = step()
          if (result instanceof Promise) await result
        }
        const used = process.cpuUsage(before)
        times.get(name)!.push((used.user + used.system) / CALLS)
      }
    }
    console.log(`# An uncached list page's steps in the service's process (C54), ${rows.length} items, ${EXTENSIONS ? `the callbacks of ${EXTENSIONS}` : 'one callback declaring reads: []'}\n`)
    console.log(`\`vitrine_bench_30000\`, list page 1 of post; ${CALLS} calls a step a round, ${ROUNDS} rounds in turn; CPU µs a page, median.\n`)
    console.log('| step | µs a page |\n| --- | ---: |')
    for (const [name] of steps) console.log(`| ${name} | ${median(times.get(name)!).toFixed(1)} |`)
  } finally {
    await sql.end()
  }
} finally {
  await close()
}
