/**
 * `bun run bench:articles`, part of `bun run bench`: what real articles cost
 * writers (C42, C55, C56; sql/search-structure.md). 10 000 posts of 1 500
 * words (about 400 distinct words each, 60 stop words among the most frequent:
 * a Zipf law of exponent 1.2 over 30 000 words), each with 5 of 200 tags, are
 * written the same way into three new databases, one step at a time across
 * the three (so that the machine's noise falls on all three alike):
 * - plain: the data model alone (migration 0001);
 * - floor: the data model plus a stored weighted tsvector of title, excerpt and
 *   body with its GIN index, the least any synchronous PostgreSQL full-text
 *   index pays (to_tsvector of 1 500 words is most of it);
 * - service: every migration of the service;
 * - with BENCH_ARTICLES_BEFORE=NNNN, also "before": the service's migrations
 *   before NNNN, to measure a change of the triggers against the code it
 *   replaces in the same run.
 * Each step is one statement, timed from the client, after a checkpoint:
 * the import of the translations, 100 bodies saved, 1 000 articles
 * unpublished then published again, 1 000 re-dated; then what search keeps.
 * The last three are timed BENCH_ARTICLES_REPEATS times a round (default 7),
 * in turn, each time on every database; a median is of all the times.
 *
 * Targets (the issue's): the import and the body saves ≤ 1.5× the floor;
 * status and date changes ≤ 3× plain; what search keeps ≤ 1.5× the floor's
 * vector and index.
 *
 * BENCH_ARTICLES (default 10000), BENCH_ROUNDS (default 1: the databases are
 * made anew each round), BENCH_ARTICLES_KEEP=1 (keep them),
 * BENCH_ARTICLES_BEFORE (unset: no "before" database). DATABASE_URL: the server (default
 * postgres://postgres@127.0.0.1:5432/postgres); only `vitrine_bench_articles_*`
 * databases are made or dropped there. Writes bench/articles-last-run.md.
 */
import { rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../src/db/connect'
import { migrate, MIGRATIONS_DIR } from '../src/db/migrate'
import { random } from '../test/support/random'
import { readRounds } from './load'
import { migrationsBefore } from './migrations-before'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ARTICLES = Number(process.env.BENCH_ARTICLES ?? 10_000)
const ROUNDS = readRounds(process.env.BENCH_ROUNDS, 1)
const WRITE_REPEATS = readRounds(process.env.BENCH_ARTICLES_REPEATS, 7)
const WORDS_PER_ARTICLE = 1500
const VOCABULARY = 30_000
const ZIPF = 1.2
const STOP_WORDS = 'the of and to a in is it that for on was with as be by at this are from or an have not but they which you were his all we their has had there been will would more can if its about into than them so what some these when who out up no only her him our very'.split(' ')

const BEFORE = process.env.BENCH_ARTICLES_BEFORE
if (BEFORE !== undefined && !/^\d{4}$/.test(BEFORE)) throw new Error(`BENCH_ARTICLES_BEFORE: a migration's four digits (0018), not ${JSON.stringify(BEFORE)}`)
type Kind = 'plain' | 'floor' | 'service' | 'before'
const KINDS: Kind[] = BEFORE ? ['plain', 'floor', 'service', 'before'] : ['plain', 'floor', 'service']

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

/** Made-up words of two to four syllables, none of them a stop word, none changed by a stemmer much. */
function vocabulary(): string[] {
  const syllables = 'ba be bi bo bu da de di do du fa fe fi fo fu ga ge gi go gu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu'.split(' ')
  const words = [...STOP_WORDS]
  for (let i = 0; words.length < VOCABULARY; i++) {
    let word = ''
    for (let n = i + syllables.length; n > 0; n = Math.floor(n / syllables.length)) word += syllables[n % syllables.length]
    words.push(`${word}n`)
  }
  return words
}

/** The articles as COPY text (tab-separated, no tab or backslash in them), the same bytes for the three databases. */
function articles(): string {
  const words = vocabulary()
  const weights = words.map((_, rank) => 1 / Math.pow(rank + 1, ZIPF))
  const total = weights.reduce((a, b) => a + b)
  const cdf: number[] = []
  let sum = 0
  for (const weight of weights) cdf.push((sum += weight / total))
  const rng = random(42)
  const draw = () => {
    const u = rng.next()
    let low = 0
    let high = cdf.length - 1
    while (low < high) {
      const middle = (low + high) >> 1
      if (cdf[middle]! < u) low = middle + 1
      else high = middle
    }
    return words[low]!
  }
  const text = (n: number) => Array.from({ length: n }, draw).join(' ')
  const rows: string[] = []
  for (let id = 1; id <= ARTICLES; id++) rows.push(`${id}\t${text(8)}\tarticle-${id}\t${text(30)}\t${text(WORDS_PER_ARTICLE)}\n`)
  return rows.join('')
}

/** The floor's vector: what 0004 kept as a generated column, with its GIN index. */
const FLOOR = `
  alter table entry_translations
    add column search_document tsvector generated always as (
      setweight(to_tsvector('english', coalesce(title, '')), 'A')
      || setweight(to_tsvector('english', coalesce(excerpt, '')), 'B')
      || setweight(to_tsvector('english', coalesce(body, '')), 'C')
    ) stored;
  create index entry_translations_search on entry_translations using gin (search_document);
`

async function makeDatabase(admin: Sql, kind: Kind, copyText: string, dirs: { model: string; before?: string }): Promise<Sql> {
  const name = `vitrine_bench_articles_${kind}`
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.unsafe(`create database ${name}`)
  const sql = connectDatabase(Object.assign(new URL(SERVER), { pathname: `/${name}` }).toString(), { max: 1 })
  await migrate(sql, kind === 'service' ? MIGRATIONS_DIR : kind === 'before' ? dirs.before! : dirs.model)
  if (kind === 'floor') await sql.unsafe(FLOOR)
  // The articles' text and their tags, staged: the import reads them, it does not make them.
  await sql.unsafe('create unlogged table staged_articles (id bigint, title text, slug text, excerpt text, body text)')
  const stream = await sql`copy staged_articles from stdin`.writable()
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject)
    stream.on('finish', resolve)
    stream.end(copyText)
  })
  await sql`insert into taxonomies (slug, name) values ('tag', 'Tag')`
  await sql`insert into terms (taxonomy_id, name, slug) select (select id from taxonomies), 'Tag ' || g, 'tag-' || g from generate_series(1, 200) g`
  await sql`insert into authors (name) select 'Author ' || g from generate_series(1, 20) g`
  await sql`
    insert into entries (id, content_type_id, status, published_at, author_id)
    select g, (select id from content_types where slug = 'post'), 'published', now() - interval '1 hour' * g, 1 + g % 20
    from generate_series(1, ${ARTICLES}::int) g
  `
  await sql`
    insert into entry_terms (entry_id, term_id, position)
    select e.id, 1 + (e.id * 7 + k * 37) % 200, k
    from entries e, generate_series(0, 4) k
  `
  await sql.unsafe('vacuum analyze')
  return sql
}

/** Milliseconds of one statement, after a checkpoint (what the one before it left to write is not its cost). */
async function timed(sql: Sql, statement: string): Promise<number> {
  await sql.unsafe('checkpoint')
  const started = performance.now()
  // Trusted text: this file's own statements.
  await sql.unsafe(statement)
  return performance.now() - started
}

/** Bytes of what search keeps: the floor's vector column and index; the service's tables (guards apart). */
async function searchBytes(sql: Sql, kind: Kind): Promise<{ search: number; guards: number }> {
  if (kind === 'plain') return { search: 0, guards: 0 }
  if (kind === 'floor') {
    const [row] = await sql<{ bytes: number }[]>`
      select (select sum(pg_column_size(search_document)) from entry_translations)::float8 + pg_relation_size('entry_translations_search') as bytes
    `
    return { search: row!.bytes, guards: 0 }
  }
  const [row] = await sql<{ search: number; guards: number }[]>`
    select (pg_total_relation_size('search_documents') + pg_total_relation_size('search_postings'))::float8 as search,
      coalesce(pg_total_relation_size(to_regclass('entry_guards')), 0)::float8 as guards
  `
  return row!
}

const STEPS: [string, string, 'floor' | 'plain'][] = [
  ['the import (one statement)', `insert into entry_translations (entry_id, language_code, title, slug, excerpt, body) select id, 'en', title, slug, excerpt, body from staged_articles`, 'floor'],
  ['100 articles\' bodies saved (one statement)', `update entry_translations set body = body || ' revised' where entry_id % 100 = 7`, 'floor'],
  ['1 000 articles unpublished (one statement)', `update entries set status = 'draft' where id % 10 = 3`, 'plain'],
  ['the same 1 000 published again', `update entries set status = 'published' where id % 10 = 3`, 'plain'],
  ['1 000 articles re-dated (`published_at`)', `update entries set published_at = published_at - interval '1 day' where id % 10 = 5`, 'plain'],
]

const admin = connectDatabase(SERVER, { max: 1 })
try {
  say(`# Long articles: ${ARTICLES.toLocaleString('en')} posts of ${WORDS_PER_ARTICLE} words`)
  const copyText = articles()
  const dirs = { model: await migrationsBefore('0002'), before: BEFORE ? await migrationsBefore(BEFORE) : undefined }
  // Synchronously: an 'exit' handler's promises never settle, and the folders stayed behind.
  process.once('exit', () => {
    for (const dir of [dirs.model, dirs.before]) if (dir) rmSync(dir, { recursive: true, force: true })
  })
  const ms: Record<string, Record<Kind, number[]>> = {}
  let bytes: Record<Kind, { search: number; guards: number }> | undefined
  for (let round = 0; round < ROUNDS; round++) {
    const dbs = {} as Record<Kind, Sql>
    for (const kind of KINDS) dbs[kind] = await makeDatabase(admin, kind, copyText, dirs)
    try {
      if (round === 0) {
        const [{ distinct }] = await dbs.floor<{ distinct: number }[]>`select avg(length(to_tsvector('english', body)))::float8 as distinct from staged_articles where id % 100 = 1`
        say()
        say(`Distinct words (lexemes) per body: ${distinct.toFixed(0)} on average.`)
      }
      const time = async (name: string, statement: string) => {
        for (const kind of KINDS) ((ms[name] ??= { plain: [], floor: [], service: [], before: [] })[kind]).push(await timed(dbs[kind], statement))
      }
      for (const [name, statement, reference] of STEPS) if (reference === 'floor') await time(name, statement)
      // The writes of a few milliseconds are timed WRITE_REPEATS times a round, in turn (a single
      // statement of 20 ms moved by half from one round to the next on this shared machine).
      for (let repeat = 0; repeat < WRITE_REPEATS; repeat++) {
        for (const [name, statement, reference] of STEPS) if (reference === 'plain') await time(name, statement)
      }
      bytes = { plain: await searchBytes(dbs.plain, 'plain'), floor: await searchBytes(dbs.floor, 'floor'), service: await searchBytes(dbs.service, 'service'), before: { search: 0, guards: 0 } }
    } finally {
      await Promise.all(KINDS.map((kind) => dbs[kind].end()))
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  say()
  say(`Milliseconds, median of ${ROUNDS} round${ROUNDS === 1 ? '' : 's'} (the status and date changes: of ${ROUNDS * WRITE_REPEATS} times, ${WRITE_REPEATS} a round; each step alternated across the ${KINDS.length} databases):`)
  say()
  // With a "before" database: its time and ratio beside the service's, measured in the same run.
  const beforeHead = BEFORE ? ` service before ${BEFORE} | its ratio |` : ''
  say(`| write | plain | floor | service | service ÷ reference | target |${beforeHead}`)
  say(`|---|---:|---:|---:|---:|---|${BEFORE ? '---:|---:|' : ''}`)
  const statusTotal = { plain: 0, service: 0, before: 0 }
  for (const [name, , reference] of STEPS) {
    const [plain, floor, service, before] = KINDS.map((kind) => median(ms[name]![kind]))
    const base = reference === 'floor' ? floor! : plain!
    const ratio = service! / base
    const target = reference === 'floor' ? 1.5 : 3
    if (reference === 'plain' && !name.includes('re-dated')) {
      statusTotal.plain += plain!
      statusTotal.service += service!
      statusTotal.before += before ?? 0
    }
    const beforeCells = BEFORE ? ` ${before!.toFixed(0)} | ${(before! / base).toFixed(2)}× |` : ''
    say(`| ${name} | ${plain!.toFixed(0)} | ${floor!.toFixed(0)} | ${service!.toFixed(0)} | ${ratio.toFixed(2)}× ${reference} | ≤ ${target}×: ${ratio <= target ? 'met' : 'missed'} |${beforeCells}`)
  }
  const both = statusTotal.service / statusTotal.plain
  const beforeBoth = BEFORE ? ` ${statusTotal.before.toFixed(0)} | ${(statusTotal.before / statusTotal.plain).toFixed(2)}× |` : ''
  say(`| unpublished, then published again (both) | ${statusTotal.plain.toFixed(0)} | | ${statusTotal.service.toFixed(0)} | ${both.toFixed(2)}× plain | ≤ 3×: ${both <= 3 ? 'met' : 'missed'} |${beforeBoth}`)
  const sizeRatio = bytes!.service.search / bytes!.floor.search
  say()
  say(`What search keeps: floor ${(bytes!.floor.search / 2 ** 20).toFixed(1)} MiB (the vectors and their GIN index), service ${(bytes!.service.search / 2 ** 20).toFixed(1)} MiB (search_documents and search_postings): ${sizeRatio.toFixed(2)}× the floor (≤ 1.5×: ${sizeRatio <= 1.5 ? 'met' : 'missed'}); and the entry guards (C56) ${(bytes!.service.guards / 2 ** 20).toFixed(1)} MiB.`)
  await writeFile(join(import.meta.dir, 'articles-last-run.md'), `${lines.join('\n')}\n`)
} finally {
  // BENCH_ARTICLES_KEEP=1 keeps the databases as the last step left them: to explain a step's triggers.
  if (process.env.BENCH_ARTICLES_KEEP !== '1') for (const kind of KINDS) await admin.unsafe(`drop database if exists vitrine_bench_articles_${kind} with (force)`).catch(() => {})
  await admin.end()
}
