/**
 * `bun run bench:sizes`, the third part of `bun run bench`: how list pages and
 * single entries hold up as the content grows. For each size it builds (or
 * reuses) a database of that many entries from bench/large-dataset.sql (about
 * 10% embargoed, 2% undated), prints the planning and execution times of the
 * list statement at page 1 and at the last page (`EXPLAIN (ANALYZE, BUFFERS)`,
 * median of 5), starts the service with CACHE=off, no extensions and the heavy
 * lane open to the whole pool (C47: bench/lanes.ts measures the lane), and
 * drives four cases on type `post` over real HTTP (wrk when installed, else
 * autocannon, 32 connections, after a 2 s warm-up each):
 *   list page 1           /api/v1/content/post
 *   last page by page     ?page=<meta.last_page>
 *   last page by cursor   the `rel="next"` link of the page before the last
 *                         (n/a while the service sends no such Link header)
 *   slug                  /api/v1/content/post/<a slug from page 1>
 *   term page 1           ?term=tag:popular (a tag on 10% of the entries, C40)
 *   term cursor page      the `rel="next"` link of the term list's page before its last
 *   search page 1         ?search=zeppelin (a word in 1% of the English titles, C42)
 * It ends with requests a second per size, the ratio of the largest size to
 * the smallest, and the targets: page 1 and the cursor page at the largest
 * size ≥ 0.8 of their throughput at the smallest, measured once more with the
 * services of both sizes up and their runs alternating (4 rounds), since the
 * machine drifts between the sizes' passes. All of it is also written
 * to bench/sizes-last-run.md.
 *
 * BENCH_SIZES (default 10000,100000,1000000): numbers of entries, comma-
 * separated, each a whole number ≥ 1000. Each size has its own database,
 * `vitrine_bench_<size>`, kept between runs: it is rebuilt only when its
 * fingerprint (the data set's text, the size, the migration files) changed,
 * because 1 000 000 entries take minutes to build. Time moves on in a kept
 * database: embargoed entries go live as their day comes (about 1/365 of
 * them a day).
 * BENCH_SECONDS (default 10, a whole number): the length of each measurement.
 * BENCH_BASELINE (unset): the path of another checkout of this repository,
 * with its own node_modules (e.g. the code before a change). Its service runs
 * beside this one on the same database; every case alternates the two, 3
 * rounds of ceil(BENCH_SECONDS / 2) s each, and reports the medians and the
 * ratio current ÷ baseline. A case the baseline cannot answer is n/a for it.
 * DATABASE_URL: the server to make the databases on; unset: the embedded
 * PostgreSQL under DATA_DIR.
 *
 * Exits 2 on a bad setting; non-zero when a measurement fails or any request
 * of this checkout failed: its numbers would describe failures, not the
 * service. Failed requests of the baseline are listed, and do not fail the run.
 */
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { openReadPool, type Sql } from '../src/db/connect'
import { explainPrepared } from './explain-list'
import { openLane, startBenchService } from './service'
import { ensureBenchDatabase } from './dataset'
import { findLink } from './link-header'
import { CONNECTIONS, load, LOAD_TOOL, median, readSeconds, type Measure } from './load'
import { setUpBench } from './setup'

const ROOT = join(import.meta.dir, '..')
const SIZES = readSizes(process.env.BENCH_SIZES)
const SECONDS = readSeconds(process.env.BENCH_SECONDS)
/** Alternating runs take half as long each; load tools take whole seconds. */
const HALF = Math.ceil(SECONDS / 2)
const BASELINE = readBaseline(process.env.BENCH_BASELINE)
const WARM_UP_SECONDS = 2
const EXPLAIN_RUNS = 5
const LIST_PATH = '/api/v1/content/post'
const CASES = ['list page 1', 'last page by page', 'last page by cursor', 'slug', 'term page 1', 'term cursor page', 'search page 1'] as const
/** C40–C42: a tag on 10% of the entries and a word in 1% of them (bench/large-dataset.sql). */
const TERM_QUERY = 'term=tag:popular'
const SEARCH_QUERY = 'search=zeppelin'
const TERM_FILTERS = { terms: [{ taxonomy: 'tag', slug: 'popular' }], author: null, search: null, order: 'date' }
const SEARCH_FILTERS = { terms: [], author: null, search: 'zeppelin', order: 'relevance' }

type CaseName = (typeof CASES)[number]
/** The cases the targets name: measured again at the smallest and the largest size, alternating. */
const ALTERNATED = ['list page 1', 'last page by cursor', 'term page 1', 'term cursor page'] as const
type AlternatedCase = (typeof ALTERNATED)[number]
type Checkout = 'current' | 'baseline'
/** A measured URL, or why a case has none. */
type Target = { path: string } | { missing: string }
interface Timing {
  planningMs: number
  executionMs: number
}
interface SizeResult {
  size: number
  rps: Record<CaseName, Partial<Record<Checkout, number>>>
}

const CHECKOUTS: Checkout[] = BASELINE ? ['current', 'baseline'] : ['current']
const DIRECTORIES: Record<Checkout, string> = { current: ROOT, baseline: BASELINE ?? '' }
const { config, target, admin, close } = await setUpBench()
const tool = LOAD_TOOL
/** What release() stops and closes after each size, and the `finally` below whatever failed. */
const services: ReturnType<typeof Bun.spawn>[] = []
const pools: Sql[] = []
/** Measurements of this checkout in which requests failed: reported, then the run exits 1. */
const failedRequests: string[] = []
/** The same of the baseline: reported only (what the change fixes may be just that). */
const baselineFailures: string[] = []

try {
  const listStatements = { current: await importExplainer(ROOT), baseline: BASELINE ? await importExplainer(BASELINE) : undefined }
  const header = [
    `# Size benchmark, ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `${tool}, ${CONNECTIONS} connections, CACHE=off, ` +
      (BASELINE
        ? `each case: ${WARM_UP_SECONDS} s warm-up, then current and baseline alternating, 3 rounds of ${HALF} s, medians.`
        : `each case: ${WARM_UP_SECONDS} s warm-up, then ${SECONDS} s.`),
    `current: ${ROOT} (${commitOf(ROOT)})` + (BASELINE ? `; baseline: ${BASELINE} (${commitOf(BASELINE)})` : ''),
    `database: ${target.embedded ? 'embedded PostgreSQL' : 'DATABASE_URL'}, ${(await admin<{ version: string }[]>`select version()`)[0].version.split(' on ')[0]}.`,
  ].join('\n')
  console.log(`${header}\n`)
  const sections: string[] = []
  const results: SizeResult[] = []
  for (const size of SIZES) {
    const { section, result } = await benchSize(size, listStatements)
    console.log(`\n${section}\n`)
    sections.push(section)
    results.push(result)
  }
  const alternating = SIZES.length > 1 ? await alternateExtremes(SIZES[0]!, SIZES.at(-1)!) : undefined
  const summary = summarize(results, alternating)
  console.log(summary)
  await writeFile(join(ROOT, 'bench', 'sizes-last-run.md'), [header, ...sections, summary].join('\n\n') + '\n')
} finally {
  await release()
  await close()
}
if (baselineFailures.length) console.log(`Requests of the baseline failed (its numbers count them as done):\n${baselineFailures.join('\n')}`)
if (failedRequests.length) {
  console.error(`Requests failed, so these numbers measure failures too:\n${failedRequests.join('\n')}`)
  process.exit(1)
}

/** One size: its database, the EXPLAIN timings, the four cases on each checkout. */
async function benchSize(size: number, listStatements: Record<Checkout, Explainer | string | undefined>) {
  const database = await ensureBenchDatabase(admin, target.url, size)
  const pool = openReadPool(database.url, config)
  pools.push(pool)
  const bases: Partial<Record<Checkout, string>> = {}
  for (const checkout of CHECKOUTS) bases[checkout] = await startService(DIRECTORIES[checkout], database.url)

  const first = await fetch(bases.current + LIST_PATH)
  if (first.status !== 200) throw new Error(`${LIST_PATH} answered ${first.status} on vitrine_bench_${size}.`)
  const page = (await first.json()) as { data: { slug: string | null }[]; meta: { last_page: number; per_page: number; total: number } }
  const { last_page: lastPage, per_page: perPage, total } = page.meta
  // An entry without a translation in the default language has no slug.
  const slug = page.data.find((item) => item.slug !== null)?.slug
  const notes: string[] = []
  const termPages = ((await (await fetch(`${bases.current}${LIST_PATH}?${TERM_QUERY}`)).json()) as { meta: { last_page: number } }).meta.last_page
  const targets = {} as Record<CaseName, Partial<Record<Checkout, Target>>>
  for (const name of CASES) targets[name] = {}
  for (const checkout of CHECKOUTS) {
    const base = bases[checkout]!
    const paths: Record<CaseName, Target> = {
      'list page 1': { path: LIST_PATH },
      'last page by page': { path: `${LIST_PATH}?page=${lastPage}` },
      'last page by cursor': await cursorTarget(base, lastPage),
      slug: slug ? { path: `${LIST_PATH}/${encodeURIComponent(slug)}` } : { missing: 'no entry of page 1 has a slug' },
      'term page 1': { path: `${LIST_PATH}?${TERM_QUERY}` },
      'term cursor page': await cursorTarget(base, termPages, `${TERM_QUERY}&`),
      'search page 1': { path: `${LIST_PATH}?${SEARCH_QUERY}` },
    }
    for (const name of CASES) targets[name][checkout] = await checkAnswers(base, paths[name], checkout)
    const cursor = targets['last page by cursor'][checkout]!
    if ('path' in cursor && !(await sameEntries(base, cursor.path, `${LIST_PATH}?page=${lastPage}`))) {
      notes.push(`${checkout}: the cursor page does not hold the same entries as page=${lastPage}.`)
    }
  }

  const explained = {} as Record<Checkout, Record<string, Timing | string>>
  const statements = [
    { name: 'list page 1', limit: perPage, offset: 0 },
    { name: `last page (offset ${(lastPage - 1) * perPage})`, limit: perPage, offset: (lastPage - 1) * perPage },
    { name: 'term page 1 (tag on 10%)', limit: perPage, offset: 0, filters: TERM_FILTERS },
    { name: 'search page 1 (word in 1%)', limit: perPage, offset: 0, filters: SEARCH_FILTERS },
  ]
  for (const checkout of CHECKOUTS) explained[checkout] = await explainTimes(database.url, listStatements[checkout]!, statements)

  const rows: string[] = []
  const result: SizeResult = { size, rps: {} as SizeResult['rps'] }
  for (const name of CASES) {
    console.log(`${label(size)}: ${name} …`)
    const measures = await measureCase(`${label(size)} ${name}`, bases, targets[name])
    result.rps[name] = Object.fromEntries(Object.entries(measures).map(([checkout, measure]) => [checkout, measure.rps]))
    for (const checkout of CHECKOUTS) {
      const caseTarget = targets[name][checkout]!
      if ('missing' in caseTarget) notes.push(`${checkout}, ${name}: n/a, ${caseTarget.missing}.`)
    }
    const current = targets[name].current!
    const url = 'path' in current ? `\`${current.path}\`` : 'n/a'
    const { current: a, baseline: b } = measures
    const errors = a || b ? String((a?.errors ?? 0) + (b?.errors ?? 0)) : 'n/a'
    rows.push(
      BASELINE
        ? `| ${name} | ${url} | ${rps(a)} | ${rps(b)} | ${ratio(a?.rps, b?.rps)} | ${ms(a?.p99)} | ${ms(b?.p99)} | ${errors} |`
        : `| ${name} | ${url} | ${rps(a)} | ${ms(a?.p50)} | ${ms(a?.p99)} | ${errors} |`,
    )
  }
  await release()

  const timing = (value: Timing | string | undefined, key: keyof Timing) => (typeof value === 'object' ? value[key].toFixed(2) : 'n/a')
  for (const checkout of CHECKOUTS) {
    for (const [statement, value] of Object.entries(explained[checkout])) {
      if (typeof value === 'string') notes.push(`${checkout}, EXPLAIN ${statement}: n/a, ${value}.`)
    }
  }
  // C42's targets: a one-word search at 100k ≥ 200 req/s; the search statement for a word in 1% of 1M entries ≤ 20 ms.
  const searched = explained.current['search page 1 (word in 1%)']
  if (size === 1_000_000 && typeof searched === 'object') {
    const total = searched.planningMs + searched.executionMs
    notes.push(`Target: search statement ≤ 20 ms at 1M: ${total <= 20 ? 'met' : 'missed'} (${searched.planningMs.toFixed(2)} ms planning + ${searched.executionMs.toFixed(2)} ms execution).`)
  }
  const searchRps = result.rps['search page 1'].current
  if (size === 100_000 && searchRps !== undefined) notes.push(`Target: one-word search at 100k uncached ≥ 200 req/s: ${searchRps >= 200 ? 'met' : 'missed'} (${searchRps.toFixed(0)}).`)
  const section = [
    `## ${label(size)} entries`,
    '',
    `\`vitrine_bench_${size}\` (${database.how}, ${(database.bytes / 1024 ** 2).toFixed(0)} MB): ${total} live posts, ${perPage} a page, last page ${lastPage}.`,
    '',
    ...(BASELINE
      ? [
          '| case | URL | current req/s | baseline req/s | current ÷ baseline | current p99 ms | baseline p99 ms | errors |',
          '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
        ]
      : ['| case | URL | req/s | p50 ms | p99 ms | errors |', '| --- | --- | ---: | ---: | ---: | ---: |']),
    ...rows,
    '',
    BASELINE
      ? `| EXPLAIN (ANALYZE, BUFFERS), median of ${EXPLAIN_RUNS} | current planning ms | current execution ms | baseline planning ms | baseline execution ms |\n| --- | ---: | ---: | ---: | ---: |`
      : `| EXPLAIN (ANALYZE, BUFFERS), median of ${EXPLAIN_RUNS} | planning ms | execution ms |\n| --- | ---: | ---: |`,
    ...statements.map(
      ({ name }) => `| ${name} | ${CHECKOUTS.map((checkout) => `${timing(explained[checkout][name], 'planningMs')} | ${timing(explained[checkout][name], 'executionMs')}`).join(' | ')} |`,
    ),
    ...(notes.length ? ['', ...notes.map((note) => `- ${note}`)] : []),
  ].join('\n')
  return { section, result }
}

/** The `rel="next"` link of the page before the last: a cursor (`after=`) pointing at the last page. */
async function cursorTarget(base: string, lastPage: number, query = ''): Promise<Target> {
  const before = Math.max(1, lastPage - 1)
  const response = await fetch(`${base}${LIST_PATH}?${query}page=${before}`)
  await response.arrayBuffer()
  if (response.status !== 200) return { missing: `page=${before} answered ${response.status}` }
  const next = findLink(response.headers.get('link'), 'next', base)
  if (!next) return { missing: response.headers.has('link') ? `no rel="next" in the Link header of page=${before}` : `no Link header on page=${before}` }
  if (!next.searchParams.has('after')) return { missing: `the next link of page=${before} is no cursor: ${next.pathname}${next.search}` }
  // The link names the service's public origin; the path is what counts.
  return { path: next.pathname + next.search }
}

/** Every measured URL answers 200: the current checkout must; for the baseline, a case it cannot answer is n/a. */
async function checkAnswers(base: string, caseTarget: Target, checkout: Checkout): Promise<Target> {
  if ('missing' in caseTarget) return caseTarget
  const response = await fetch(base + caseTarget.path)
  const body = await response.text()
  if (response.status === 200) return caseTarget
  if (checkout === 'baseline') return { missing: `${caseTarget.path} answered ${response.status}` }
  throw new Error(`${caseTarget.path} answered ${response.status}, not 200: ${body.slice(0, 300)}`)
}

async function sameEntries(base: string, path: string, otherPath: string): Promise<boolean> {
  const ids = async (url: string) => ((await (await fetch(url)).json()) as { data: { id: number }[] }).data.map((item) => item.id).join(',')
  return (await ids(base + path)) === (await ids(base + otherPath))
}

/** One case on each checkout that has it: alone, SECONDS; beside a baseline, 3 alternating rounds of HALF and their medians. */
async function measureCase(name: string, bases: Partial<Record<Checkout, string>>, targets: Partial<Record<Checkout, Target>>) {
  const urls: [Checkout, string][] = []
  for (const checkout of CHECKOUTS) {
    const caseTarget = targets[checkout]!
    if ('path' in caseTarget) urls.push([checkout, bases[checkout] + caseTarget.path])
  }
  for (const [, url] of urls) await load(tool, url, WARM_UP_SECONDS)
  const runs = new Map<Checkout, Measure[]>(urls.map(([checkout]) => [checkout, []]))
  for (let round = 0; round < (BASELINE ? 3 : 1); round++) {
    for (const [checkout, url] of urls) {
      const measure = await load(tool, url, BASELINE ? HALF : SECONDS)
      if (measure.errors > 0) (checkout === 'current' ? failedRequests : baselineFailures).push(`  ${name}, ${checkout}: ${measure.errors} failed requests`)
      runs.get(checkout)!.push(measure)
    }
  }
  const measures: Partial<Record<Checkout, Measure>> = {}
  for (const [checkout, list] of runs) {
    measures[checkout] = {
      rps: median(list.map((m) => m.rps)),
      p50: median(list.map((m) => m.p50)),
      p99: median(list.map((m) => m.p99)),
      errors: list.reduce((sum, m) => sum + m.errors, 0),
    }
  }
  return measures
}

/** A checkout's list statement and read pool: each is explained with its own session settings. */
interface Explainer {
  listStatement: (sql: Sql, options: Record<string, unknown>) => unknown
  openReadPool: (url: string, settings: { databasePoolMax: number; databaseTimeoutMs: number; databaseHeavyMax: number; databaseHeavyQueue: number }) => Sql
}

/**
 * The checkout's `listStatement` (src/content/list-statement.ts; src/content/queries.ts
 * before issue 31) and `openReadPool`, or why they cannot be had: its EXPLAIN is then n/a.
 */
async function importExplainer(directory: string): Promise<Explainer | string> {
  const file = ['list-statement.ts', 'queries.ts'].map((name) => join('src', 'content', name)).find((path) => existsSync(join(directory, path))) ?? 'src/content/list-statement.ts'
  try {
    const { listStatement } = await import(join(directory, file))
    const { openReadPool } = await import(join(directory, 'src', 'db', 'connect.ts'))
    return typeof listStatement === 'function' ? { listStatement, openReadPool } : `${file} exports no listStatement function`
  } catch (error) {
    return `${file} did not load: ${(error as Error).message}`
  }
}

/**
 * Median planning and execution times of each statement over EXPLAIN_RUNS runs of
 * `explain (analyze, buffers)`, on one connection of the checkout's own read pool:
 * prepared once and executed, as the service runs it (see explain-list.ts). A
 * statement that cannot be made or explained gets the reason instead.
 */
async function explainTimes(url: string, explainer: Explainer | string, statements: { name: string; limit: number; offset: number; filters?: object }[]) {
  const times: Record<string, Timing | string> = {}
  if (typeof explainer === 'string') {
    for (const { name } of statements) times[name] = explainer
    return times
  }
  const pool = explainer.openReadPool(url, { databasePoolMax: 1, databaseTimeoutMs: 60_000, databaseHeavyMax: 1, databaseHeavyQueue: 0 })
  try {
    for (const { name, limit, offset, filters } of statements) {
      try {
        // Both shapes of the options: `start` (keyset pagination) and `offset` (before it).
        const statement = explainer.listStatement(pool, { type: 'post', lang: undefined, limit, offset, start: { offset }, filters })
        const { planningMs, executionMs } = await explainPrepared(pool, statement as never, EXPLAIN_RUNS)
        times[name] = { planningMs, executionMs }
      } catch (error) {
        times[name] = `listStatement could not be explained: ${(error as Error).message.split('\n')[0]}`
      }
    }
  } finally {
    await pool.end()
  }
  return times
}

/** Requests a second of the cases the targets name, at the smallest and the largest size, measured alternately. */
interface Alternating {
  small: number
  large: number
  rps: Record<AlternatedCase, { small: number[]; large: number[] }>
}

/**
 * The targets compare two sizes measured minutes apart in the pass above, and
 * this 2-core machine drifts in between (one run: page 1 at 1M ÷ 10k 0.68, and
 * 0.95 when the two alternate). So both services run at once, and each case
 * alternates small and large, 4 rounds of HALF seconds: the targets use the
 * ratio of their medians.
 */
async function alternateExtremes(small: number, large: number): Promise<Alternating> {
  const bases = { small: await startService(ROOT, (await ensureBenchDatabase(admin, target.url, small)).url), large: await startService(ROOT, (await ensureBenchDatabase(admin, target.url, large)).url) }
  try {
    const paths = { small: {} as Record<string, string>, large: {} as Record<string, string> }
    for (const which of ['small', 'large'] as const) {
      const first = (await (await fetch(bases[which] + LIST_PATH)).json()) as { meta: { last_page: number } }
      const cursor = await cursorTarget(bases[which], first.meta.last_page)
      const termFirst = (await (await fetch(`${bases[which]}${LIST_PATH}?${TERM_QUERY}`)).json()) as { meta: { last_page: number } }
      const termCursor = await cursorTarget(bases[which], termFirst.meta.last_page, `${TERM_QUERY}&`)
      paths[which] = {
        'list page 1': LIST_PATH,
        'last page by cursor': 'path' in cursor ? cursor.path : '',
        'term page 1': `${LIST_PATH}?${TERM_QUERY}`,
        'term cursor page': 'path' in termCursor ? termCursor.path : '',
      }
    }
    const rps = {} as Alternating['rps']
    for (const name of ALTERNATED) {
      rps[name] = { small: [], large: [] }
      if (!paths.small[name] || !paths.large[name]) continue
      console.log(`alternating ${label(small)} and ${label(large)}: ${name} …`)
      for (const which of ['small', 'large'] as const) await load(tool, bases[which] + paths[which][name], WARM_UP_SECONDS)
      for (let round = 0; round < 4; round++) {
        for (const which of ['small', 'large'] as const) {
          const measure = await load(tool, bases[which] + paths[which][name], HALF)
          if (measure.errors > 0) failedRequests.push(`  alternating ${name}, ${which}: ${measure.errors} failed requests`)
          rps[name][which].push(measure.rps)
        }
      }
    }
    return { small, large, rps }
  } finally {
    await release()
  }
}

function summarize(results: SizeResult[], alternating: Alternating | undefined): string {
  const smallest = results[0]
  const largest = results.at(-1)!
  const spread = `${label(largest.size)} ÷ ${label(smallest.size)}`
  const growth = (name: CaseName, checkout: Checkout) => (results.length > 1 ? ratio(largest.rps[name][checkout], smallest.rps[name][checkout]) : 'n/a')
  const header = BASELINE
    ? [
        `| case | ${results.map((r) => `${label(r.size)} current | ${label(r.size)} baseline | ${label(r.size)} ratio`).join(' | ')} | ${spread} current | ${spread} baseline |`,
        `| --- | ${results.map(() => '---: | ---: | ---:').join(' | ')} | ---: | ---: |`,
      ]
    : [`| case | ${results.map((r) => label(r.size)).join(' | ')} | ${spread} |`, `| --- | ${results.map(() => '---:').join(' | ')} | ---: |`]
  const rows = CASES.map((name) =>
    BASELINE
      ? `| ${name} | ${results.map((r) => `${count(r.rps[name].current)} | ${count(r.rps[name].baseline)} | ${ratio(r.rps[name].current, r.rps[name].baseline)}`).join(' | ')} | ${growth(name, 'current')} | ${growth(name, 'baseline')} |`
      : `| ${name} | ${results.map((r) => count(r.rps[name].current)).join(' | ')} | ${growth(name, 'current')} |`,
  )
  const verdict = (value: string, floor: number) => (value === 'n/a' ? 'n/a' : `${Number(value) >= floor ? 'met' : 'missed'} (${value})`)
  const targets: string[] = []
  if (alternating) {
    const { small, large } = alternating
    const alternate = (name: keyof Alternating['rps']) => {
      const { small: a, large: b } = alternating.rps[name]
      return a.length && b.length ? ratio(median(b), median(a)) : 'n/a'
    }
    const line = (name: keyof Alternating['rps']) => {
      const { small: a, large: b } = alternating.rps[name]
      return `| ${name} | ${a.map((n) => n.toFixed(0)).join(', ')} | ${b.map((n) => n.toFixed(0)).join(', ')} | ${alternate(name)} |`
    }
    targets.push(
      `Alternating ${label(small)} and ${label(large)} (current, 4 rounds of ${HALF} s each, req/s):`,
      '',
      `| case | ${label(small)} | ${label(large)} | median ${label(large)} ÷ ${label(small)} |`,
      '| --- | --- | --- | ---: |',
      ...ALTERNATED.map(line),
      '',
      `Targets (from the alternating runs): page 1 at ${label(large)} ≥ 0.8 of ${label(small)}: ${verdict(alternate('list page 1'), 0.8)}; ` +
        `cursor last page ≥ 0.8: ${verdict(alternate('last page by cursor'), 0.8)}; ` +
        `page 1 filtered by a term on 10% (C43) ≥ 0.8: ${verdict(alternate('term page 1'), 0.8)}; its cursor page ≥ 0.8: ${verdict(alternate('term cursor page'), 0.8)}. ` +
        `In the pass above: ${growth('list page 1', 'current')}, ${growth('last page by cursor', 'current')}, ${growth('term page 1', 'current')} and ${growth('term cursor page', 'current')}.`,
    )
  } else {
    targets.push('Targets (page 1 and the cursor page at the largest size ≥ 0.8 of the smallest): n/a with one size.')
  }
  if (BASELINE) {
    const at30k = results.find((r) => r.size === 30_000)
    targets.push(
      `Uncached list page 1 at 30k ≥ 1.5 × baseline: ${at30k ? verdict(ratio(at30k.rps['list page 1'].current, at30k.rps['list page 1'].baseline), 1.5) : 'n/a (30000 is not in BENCH_SIZES)'}.`,
    )
  }
  return ['## Requests a second by size', '', ...header, ...rows, '', ...targets].join('\n')
}

/** The services of one size, stopped before the next size (and by the `finally`). */
async function startService(directory: string, databaseUrl: string): Promise<string> {
  // CACHE=off: each request runs its statement; bench/cache.ts measures the cache. The heavy lane
  // open (C47): 32 connections on the last page or a search measure the statement, not the line.
  const { base, process: service } = await startBenchService({ directory, databaseUrl, env: { CACHE: 'off', ...openLane(config.databasePoolMax) } })
  services.push(service)
  return base
}

/** Stops the services and closes the pools of the size at hand. */
async function release() {
  const stopping = services.splice(0)
  for (const service of stopping) service.kill('SIGTERM')
  await Promise.all([...stopping.map((service) => service.exited), ...pools.splice(0).map((pool) => pool.end())])
}

function commitOf(directory: string): string {
  const run = Bun.spawnSync(['git', 'rev-parse', '--short', 'HEAD'], { cwd: directory })
  return run.success ? run.stdout.toString().trim() : 'no git commit'
}

/** BENCH_SIZES: comma-separated whole numbers, each at least 1000 (default 10000,100000,1000000); anything else exits 2. */
function readSizes(text: string | undefined): number[] {
  if (text === undefined || text.trim() === '') return [10_000, 100_000, 1_000_000]
  const parts = text.split(',').map((part) => part.trim())
  if (!parts.every((part) => /^\d+$/.test(part) && Number(part) >= 1000 && Number.isSafeInteger(Number(part)))) {
    console.error(`bench: BENCH_SIZES must be comma-separated whole numbers of entries, each at least 1000, not "${text}".`)
    process.exit(2)
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b)
}

/** BENCH_BASELINE: unset, or a checkout of this repository (src/main.ts in it); anything else exits 2. */
function readBaseline(text: string | undefined): string | undefined {
  if (text === undefined || text.trim() === '') return undefined
  const directory = resolve(text.trim())
  if (!existsSync(join(directory, 'src', 'main.ts')) || !existsSync(join(directory, 'node_modules'))) {
    console.error(`bench: BENCH_BASELINE must be a checkout of this repository with src/main.ts and node_modules, not "${text}".`)
    process.exit(2)
  }
  return directory
}


/** 10k, 100k, 1M, 1.5M, 25k … */
function label(size: number): string {
  return size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}k`
}

function count(value: number | undefined): string {
  return value === undefined ? 'n/a' : value.toFixed(0)
}

function rps(measure: Measure | undefined): string {
  return count(measure?.rps)
}

function ms(value: number | undefined): string {
  return value === undefined ? 'n/a' : value.toFixed(1)
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined ? 'n/a' : (a / b).toFixed(2)
}
