import { OTHER_ROUTE } from '../metrics/families'

/**
 * The template of the route a request URL takes, as OpenTelemetry's
 * `http.route` names it (`/api/v1/content/{type}`), for the request metric
 * (C53): never the path itself, so that slugs and ids make no new series.
 * A path no route matches is OTHER_ROUTE. Static segments win over
 * parameters, as in the router.
 * @example routeTemplates(['/api/v1/content/:type'])('http://localhost/api/v1/content/post?page=2') // '/api/v1/content/{type}'
 */
export function routeTemplates(paths: readonly string[]): (url: string) => string {
  const templates = [...new Set(paths)]
    .map((path) => ({ segments: path.split('/'), template: path.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}') }))
    // More static segments first: `/api/v1/content/{type}/{id}` must not take `/api/v1/sync/{type}`'s place.
    .sort((a, b) => staticCount(b.segments) - staticCount(a.segments))
  return (url) => {
    const segments = pathOf(url).split('/')
    for (const { segments: pattern, template } of templates) {
      if (matches(pattern, segments)) return template
    }
    return OTHER_ROUTE
  }
}

function staticCount(segments: readonly string[]): number {
  return segments.filter((segment) => !segment.startsWith(':') && segment !== '*').length
}

function matches(pattern: readonly string[], segments: readonly string[]): boolean {
  const wildcard = pattern[pattern.length - 1] === '*'
  if (wildcard ? segments.length < pattern.length : segments.length !== pattern.length) return false
  for (let index = 0; index < pattern.length; index++) {
    const part = pattern[index]
    if (part === '*') return true
    if (part.startsWith(':') ? segments[index] === '' : part !== segments[index]) return false
  }
  return true
}

/** The path of an absolute URL (or of a bare path), without its query. */
function pathOf(url: string): string {
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start === -1) return '/'
  const query = url.indexOf('?', start)
  return query === -1 ? url.slice(start) : url.slice(start, query)
}
