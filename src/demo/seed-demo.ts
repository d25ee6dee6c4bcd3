import type { TransactionSql } from 'postgres'
import type { Sql } from '../db/connect'

/** The database already holds entries: demo content goes into empty ones only. */
export class NotEmptyError extends Error {}

const DAY = 86_400_000

const LANGUAGES = [
  { code: 'en', name: 'English', is_default: true },
  { code: 'fr', name: 'Français', is_default: false },
  { code: 'de', name: 'Deutsch', is_default: false },
]

const AUTHORS = ['Ada Lindqvist', 'Marc Dubois', 'Lena Vogel', 'Sam Okafor']

const TAXONOMIES = [
  { slug: 'category', name: 'Category', terms: ['Engineering', 'Design', 'Company', 'Guides'] },
  { slug: 'tag', name: 'Tag', terms: ['PostgreSQL', 'TypeScript', 'Performance', 'Accessibility', 'Caching', 'Release'] },
]

const PAGES = ['About us', 'Contact', 'Careers', 'Pricing', 'Privacy policy', 'Terms of service', 'Press', 'Team', 'Partners', 'Support']

const POST_TOPICS = [
  'Shipping a content API', 'Why we cache at the edge', 'Designing for slow networks', 'A year of TypeScript',
  'Indexes that pay for themselves', 'Writing good alt text', 'Our release process', 'Static sites, dynamic content',
  'Measuring p99 latency', 'Dark mode done right', 'How we pick dependencies', 'Pagination without surprises',
  'Translating a product', 'The cost of a database round trip', 'Images at every size', 'Feature flags in practice',
  'Postmortem: the Tuesday outage', 'Hiring our first designer', 'Accessible forms', 'Query plans for humans',
  'Offline-first mobile apps', 'A style guide for APIs', 'Time zones are hard', 'What we learned from our users',
  'Semantic HTML still matters', 'Load testing on a budget', 'A tour of our stack', 'Keeping dependencies fresh',
  'Choosing a headless CMS', 'Web fonts without layout shift', 'Notes from the conference', 'Backups you can restore',
  'Error messages people understand', 'The case for boring technology', 'Preview builds for every branch',
  'Sustainable pace', 'Colour contrast checks', 'Making slugs stable', 'Our open source policy', 'Ten years of blogging',
]

const PROJECTS = [
  { title: 'Harbour museum website', client: 'Harbour Museum', year: 2024 },
  { title: 'Transit app content feed', client: 'City Transit', year: 2025 },
  { title: 'Cookbook static site', client: 'Kitchen Press', year: 2023 },
  { title: 'University news portal', client: 'North University', year: 2025 },
  { title: 'Festival programme', client: 'Summer Sounds', year: 2026 },
  { title: 'Bank help centre', client: 'Fjord Bank', year: 2024 },
  { title: 'Outdoor gear catalogue', client: 'Ridge Outfitters', year: 2023 },
  { title: 'Library events calendar', client: 'Public Library', year: 2026 },
  { title: 'Architecture studio portfolio', client: 'Studio Norr', year: 2025 },
  { title: 'Charity annual report', client: 'Open Hands', year: 2024 },
]

const FR: Record<string, string> = { 'About us': 'À propos', Contact: 'Contact', Careers: 'Carrières', Pricing: 'Tarifs' }
const DE: Record<string, string> = { 'About us': 'Über uns', Contact: 'Kontakt', Careers: 'Karriere', Pricing: 'Preise' }

/**
 * Loads a small, realistic multilingual site into an empty, migrated database:
 * pages, posts and projects (a custom type with custom fields), drafts,
 * scheduled and embargoed entries, missing translations, images with and
 * without variants, categories and tags. Refuses, changing nothing, when the
 * database holds any entry.
 * @example await seedDemo(sql) // { entries: 60 }
 */
export async function seedDemo(sql: Sql, now = new Date()): Promise<{ entries: number }> {
  return sql.begin(async (tx) => {
    await tx`lock table entries in exclusive mode`
    const [{ count }] = await tx<{ count: number }[]>`select count(*)::int as count from entries`
    if (count > 0) throw new NotEmptyError(`The database already holds ${count} entries; demo content is only loaded into an empty one.`)

    await tx`update languages set is_default = false where code <> 'en'`
    await tx`
      insert into languages ${tx(LANGUAGES)}
      on conflict (code) do update set name = excluded.name, is_default = excluded.is_default
    `
    const [project] = await tx<{ id: number }[]>`
      insert into content_types (slug, name) values ('project', 'Project')
      on conflict (slug) do update set name = excluded.name
      returning id
    `
    const types = new Map((await tx<{ id: number; slug: string }[]>`select id, slug from content_types`).map((row) => [row.slug, row.id]))
    const authors = await tx<{ id: number }[]>`insert into authors ${tx(AUTHORS.map((name) => ({ name })))} returning id`
    const termIds: number[][] = []
    for (const taxonomy of TAXONOMIES) {
      const [{ id }] = await tx<{ id: number }[]>`
        insert into taxonomies (slug, name) values (${taxonomy.slug}, ${taxonomy.name})
        on conflict (slug) do update set name = excluded.name
        returning id
      `
      const terms = await tx<{ id: number }[]>`
        insert into terms ${tx(taxonomy.terms.map((name) => ({ taxonomy_id: id, name, slug: slugify(name) })))}
        returning id
      `
      termIds.push(terms.map((term) => term.id))
    }
    const images = await seedImages(tx)
    const fields = await tx<{ id: number; key: string }[]>`
      insert into custom_fields ${tx([
        { content_type_id: project.id, key: 'client', type: 'text' },
        { content_type_id: project.id, key: 'year', type: 'number' },
        { content_type_id: project.id, key: 'summary', type: 'text' },
      ])}
      returning id, key
    `
    const field = (key: string) => fields.find((row) => row.key === key)!.id

    const specs = [
      ...PAGES.map((title, i) => ({ type: 'page', title, i })),
      ...POST_TOPICS.map((title, i) => ({ type: 'post', title, i })),
      ...PROJECTS.map((p, i) => ({ type: 'project', title: p.title, i })),
    ]
    let n = 0
    for (const spec of specs) {
      n++
      const { status, publishedAt } = publication(spec.i, spec.type, now)
      const [entry] = await tx<{ id: number }[]>`
        insert into entries ${tx({
          content_type_id: types.get(spec.type)!,
          status,
          published_at: publishedAt,
          created_at: new Date((publishedAt ?? now).getTime() - 3 * DAY),
          updated_at: now,
          author_id: spec.type === 'page' && spec.i % 3 === 0 ? null : authors[n % authors.length].id,
          featured_image_id: n % 4 === 0 ? null : images[n % images.length],
        })}
        returning id
      `
      await tx`insert into entry_translations ${tx(translations(entry.id, spec.title, spec.type, spec.i))}`
      const tags = termIds[1]
      const links = [termIds[0][n % termIds[0].length], tags[n % tags.length], tags[(n + 2) % tags.length]]
        .slice(0, spec.type === 'page' ? 0 : 1 + (n % 3))
      if (links.length) {
        await tx`insert into entry_terms ${tx(links.map((term_id, position) => ({ entry_id: entry.id, term_id, position })))}`
      }
      if (spec.type === 'project') {
        const p = PROJECTS[spec.i]
        await tx`
          insert into field_values ${tx([
            { entry_id: entry.id, custom_field_id: field('client'), language_code: null, value: tx.json(p.client) },
            { entry_id: entry.id, custom_field_id: field('year'), language_code: null, value: tx.json(p.year) },
            { entry_id: entry.id, custom_field_id: field('summary'), language_code: 'en', value: tx.json(`${p.title} for ${p.client}.`) },
            ...(spec.i % 2 === 0
              ? [{ entry_id: entry.id, custom_field_id: field('summary'), language_code: 'fr', value: tx.json(`${p.title} pour ${p.client}.`) }]
              : []),
          ])}
        `
      }
    }
    return { entries: specs.length }
  })
}

/** Mostly published in the past; some drafts, some scheduled, some embargoed (C1). */
function publication(i: number, type: string, now: Date): { status: string; publishedAt: Date | null } {
  if (type === 'post' && i % 10 === 7) return { status: 'draft', publishedAt: null }
  if (type === 'post' && i % 10 === 8) return { status: 'scheduled', publishedAt: new Date(now.getTime() + (i + 1) * DAY) }
  if (type === 'post' && i % 13 === 5) return { status: 'published', publishedAt: new Date(now.getTime() + (i + 2) * DAY) }
  if (type === 'page' && i === 9) return { status: 'draft', publishedAt: null }
  if (type === 'page' && i % 4 === 1) return { status: 'published', publishedAt: null }
  // Two posts share a date, so that the id breaks the tie (C11).
  const daysAgo = type === 'post' && i === 3 ? 2 : i * 2 + (type === 'project' ? 5 : 1)
  return { status: 'published', publishedAt: new Date(now.getTime() - daysAgo * DAY + 9.5 * 3_600_000) }
}

function translations(entryId: number, title: string, type: string, i: number) {
  const rows = [row('en', title, `${title}: a short summary in English.`)]
  // English only for every third entry; German for every second.
  if (i % 3 !== 2) rows.push(row('fr', FR[title] ?? `${title} (FR)`, `${title} : un court résumé en français.`))
  if (i % 2 === 0) rows.push(row('de', DE[title] ?? `${title} (DE)`, `${title}: eine kurze Zusammenfassung auf Deutsch.`))
  return rows

  function row(language_code: string, text: string, excerpt: string) {
    return {
      entry_id: entryId,
      language_code,
      title: text,
      slug: slugify(text),
      excerpt: type === 'page' && i % 2 === 1 ? null : excerpt,
      meta_title: `${text} | Vitrine demo`,
      meta_description: i % 5 === 4 ? null : excerpt,
      body: `<p>${excerpt}</p>\n<p>This is the body of “${text}”.</p>`,
    }
  }
}

async function seedImages(tx: TransactionSql): Promise<number[]> {
  const ids: number[] = []
  for (let i = 1; i <= 12; i++) {
    // A few images live on another host; most are storage-relative paths (C15).
    const path = i % 5 === 0 ? `https://images.example.com/stock/photo-${i}.jpg` : `uploads/2026/photo-${i}.jpg`
    const [media] = await tx<{ id: number }[]>`
      insert into media (path, alt) values (${path}, ${i % 4 === 0 ? null : `Demo photo ${i}`})
      returning id
    `
    // Some variants are not generated yet: every third image has none, every fourth only a thumbnail.
    const variants = i % 3 === 0 ? [] : i % 4 === 0 ? ['thumbnail'] : ['thumbnail', 'medium']
    if (variants.length) {
      await tx`
        insert into media_variants ${tx(variants.map((name) => ({ media_id: media.id, name, path: path.replace(/\.jpg$/, `-${name}.jpg`) })))}
      `
    }
    ids.push(media.id)
  }
  return ids
}

function slugify(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
}
