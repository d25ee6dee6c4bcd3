import { random } from './random'

/** One generated request (test/openapi-corpus.test.ts, scripts/prism.ts). */
export interface GeneratedRequest {
  method: string
  /** The documented path it goes to. */
  template: string
  url: string
  headers: Record<string, string>
}

/**
 * `count` requests a client could send (seeded): content lists and entries with every parameter,
 * good and bad, other methods, the discovery routes, /healthz and /readyz; `types`, `languages`
 * and `slugs` are the site's, mixed with ones it does not have.
 * @example generateRequests(1, 300, { types: ['post'], languages: ['en'], slugs: ['hello'] })
 */
export function generateRequests(seed: number, count: number, site: { types: string[]; languages: string[]; slugs: string[] }): GeneratedRequest[] {
  const { types, languages, slugs } = site
  const rng = random(seed)
  const maybe = (values: (string | undefined)[]) => rng.pick(values)
  const query = (parameters: Record<string, string | undefined>) => {
    const text = new URLSearchParams(Object.entries(parameters).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString()
    return text ? `?${text}` : ''
  }
  const requests: GeneratedRequest[] = []
  for (let i = 0; i < count; i++) {
    const type = rng.pick([...types, ...types, 'nope', 'Post'])
    const lang = maybe([undefined, ...languages, 'xx'])
    const headers: Record<string, string> = rng.next() < 0.5 ? { 'x-member': '1' } : {}
    // C44, C45: items of every shape, and their 400s.
    const fields = maybe([undefined, undefined, undefined, 'id,title', 'slug,alternates', 'excerpt,reading_time_minutes', 'terms, id,', '', 'nope'])
    const include = maybe([undefined, undefined, undefined, 'alternates', 'terms'])
    const kind = rng.next()
    if (kind < 0.45) {
      const page = maybe([undefined, undefined, '1', '2', '3', '40', '0', 'x', '1.5'])
      const perPage = maybe([undefined, undefined, '1', '5', '20', '100', '500', '0', '-1', 'abc'])
      requests.push({ method: 'get', template: '/api/v1/content/{type}', url: `/api/v1/content/${type}${query({ page, per_page: perPage, lang, fields, include })}`, headers })
    } else if (kind < 0.75) {
      const slug = rng.pick([...slugs, 'nope', 'a%2Fb', '%E0%A4%A'])
      requests.push({ method: 'get', template: '/api/v1/content/{type}/{slug}', url: `/api/v1/content/${type}/${slug}${query({ lang, fields, include })}`, headers })
    } else if (kind < 0.85) {
      const method = rng.pick(['post', 'put', 'patch', 'delete'])
      const [template, url] = rng.pick([['/api/v1/content/{type}', `/api/v1/content/${type}`], ['/api/v1/content/{type}/{slug}', `/api/v1/content/${type}/${rng.pick(slugs)}`]])
      requests.push({ method, template, url, headers })
    } else if (kind < 0.9) {
      // C46: the discovery routes, with every answer they give.
      const taxonomy = rng.pick(['tag', 'category', 'nope'])
      const page = maybe([undefined, '1', '2', '0', 'x'])
      const perPage = maybe([undefined, '1', '500', '-1'])
      const termType = maybe([undefined, ...types, 'nope'])
      const terms = `/api/v1/taxonomies/${taxonomy}/terms${query({ type: termType, page, per_page: perPage })}`
      const [template, url] = rng.pick([
        ['/api/v1/taxonomies/{taxonomy}/terms', terms],
        ['/api/v1/taxonomies/{taxonomy}/terms', terms],
        ['/api/v1/languages', '/api/v1/languages'],
        ['/api/v1/content-types', '/api/v1/content-types'],
        ['/api/v1/taxonomies', '/api/v1/taxonomies'],
        ['/api/v1', '/api/v1'],
      ])
      requests.push({ method: 'get', template, url, headers })
    } else {
      const path = rng.pick(['/healthz', '/readyz'])
      requests.push({ method: 'get', template: path, url: path, headers })
    }
  }
  return requests
}

