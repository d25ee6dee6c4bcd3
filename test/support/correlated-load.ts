import type { Sql } from '../../src/db/connect'

/** What the load asks for, and what the answer must be: one entry by slug, or one page of the list. */
export interface Expectations {
  /** slug → entry id */
  slugs: Map<string, number>
  /** page number (per_page = PAGE_SIZE) → the ids of that page, in order */
  pages: Map<number, number[]>
}

export const PAGE_SIZE = 5

export interface RequestRecord {
  /** ms since `started` (runCorrelatedLoad) */
  start: number
  end: number
  status: number
  path: string
}

export interface LoadReport {
  records: RequestRecord[]
  /** Answers that did not belong to their request (another slug, another page), with what was asked. */
  misattributed: string[]
  /** Statuses other than 200 and 503, or a 503 without its body and Retry-After. */
  unexpected: string[]
  /** Requests that failed at the HTTP level (connection refused, reset): the service was not there. */
  transportErrors: number
}

/**
 * Inserts `count` live posts with distinct slugs and publication times, and
 * returns what every slug and page must answer (C11 order).
 * @example const expected = await seedCorrelationSite(db.sql, 60)
 */
export async function seedCorrelationSite(sql: Sql, count: number): Promise<Expectations> {
  const [{ id: typeId }] = await sql<{ id: number }[]>`select id from content_types where slug = 'post'`
  const slugs = new Map<string, number>()
  const ids: number[] = []
  for (let i = 1; i <= count; i++) {
    const [{ id }] = await sql<{ id: number }[]>`
      insert into entries (content_type_id, status, published_at)
      values (${typeId}, 'published', now() - make_interval(hours => ${i}))
      returning id
    `
    await sql`insert into entry_translations (entry_id, language_code, title, slug) values (${id}, 'en', ${`Entry ${i}`}, ${`entry-${i}`})`
    slugs.set(`entry-${i}`, id)
    ids.push(id)
  }
  const pages = new Map<number, number[]>()
  for (let page = 1; (page - 1) * PAGE_SIZE < ids.length; page++) pages.set(page, ids.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE))
  return { slugs, pages }
}

/**
 * Runs `concurrency` clients against the service until `stop` resolves, each
 * asking for random slugs and pages, and checks every answer against what it
 * asked for (issue 13: every answer belongs to its request).
 * @example const report = await runCorrelatedLoad(url, expected, 16, Bun.sleep(2000))
 */
export async function runCorrelatedLoad(
  baseUrl: string,
  expected: Expectations,
  concurrency: number,
  stop: Promise<unknown>,
  started = performance.now(),
  /** filled as answers come, for a caller that watches the load while it runs */
  report: LoadReport = { records: [], misattributed: [], unexpected: [], transportErrors: 0 },
): Promise<LoadReport> {
  let stopped = false
  void stop.then(() => (stopped = true))
  const slugs = [...expected.slugs.keys()]
  const pages = [...expected.pages.keys()]
  const worker = async () => {
    while (!stopped) {
      const bySlug = Math.random() < 0.5
      const slug = slugs[Math.floor(Math.random() * slugs.length)]
      const page = pages[Math.floor(Math.random() * pages.length)]
      const path = bySlug ? `/api/v1/content/post/${slug}` : `/api/v1/content/post?per_page=${PAGE_SIZE}&page=${page}`
      const start = performance.now() - started
      let response: Response
      let text: string
      try {
        response = await fetch(baseUrl + path)
        text = await response.text()
      } catch {
        report.transportErrors++
        await Bun.sleep(5)
        continue
      }
      report.records.push({ start, end: performance.now() - started, status: response.status, path })
      if (response.status === 200) {
        const body = JSON.parse(text)
        const got = bySlug ? [body.data?.id] : body.data?.map((item: { id: number }) => item.id)
        const want = bySlug ? [expected.slugs.get(slug)] : expected.pages.get(page)
        if (JSON.stringify(got) !== JSON.stringify(want)) report.misattributed.push(`${path} answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`)
      } else if (response.status !== 503 || text !== '{"error":"Service unavailable."}' || !/^\d+$/.test(response.headers.get('retry-after') ?? '')) {
        report.unexpected.push(`${path}: ${response.status} ${text.slice(0, 200)}`)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return report
}

/**
 * How long after `faultEnd` (ms since the load started) the service answered
 * every request again: the start of the first request after which no request
 * failed (of those answered before `until`, the next fault), minus `faultEnd`. Infinity when it never did.
 * @example recoveryMs(report.records, 2000) // 180
 */
export function recoveryMs(records: RequestRecord[], faultEnd: number, until = Infinity): number {
  const after = records.filter((record) => record.start >= faultEnd && record.end < until).sort((a, b) => a.start - b.start)
  let lastFailure = -1
  after.forEach((record, index) => {
    if (record.status !== 200) lastFailure = index
  })
  const firstGood = after[lastFailure + 1]
  return firstGood ? Math.max(0, firstGood.start - faultEnd) : Infinity
}

/** p-th percentile of durations, in ms. */
export function percentile(values: number[], p: number): number {
  if (!values.length) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}
