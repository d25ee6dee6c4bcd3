import { OTHER_ROUTE } from '../metrics/families'

const SLASH = '/'.charCodeAt(0)

/** The routes' paths as a tree of segments: a static segment, a parameter (`:type`), or the rest (`*`). */
interface RouteNode {
  /** A handful per node: compared in place, without cutting the segment out of the URL. */
  statics: { segment: string; node: RouteNode }[]
  parameter?: RouteNode
  /** The template of a route whose last segment is `*`: it takes any rest of the path. */
  rest?: string
  /** The template of the route that ends here. */
  template?: string
}

/**
 * The template of the route a request URL takes, as OpenTelemetry's
 * `http.route` names it (`/api/v1/content/{type}`), for the request metric
 * (C53): never the path itself, so that slugs and ids make no new series.
 * A path no route matches is OTHER_ROUTE. Static segments win over
 * parameters, as in the router. It walks a tree of the routes' segments
 * without splitting the path: this runs on the cache's hit path.
 * @example routeTemplates(['/api/v1/content/:type'])('http://localhost/api/v1/content/post?page=2') // '/api/v1/content/{type}'
 */
export function routeTemplates(paths: readonly string[]): (url: string) => string {
  const root: RouteNode = { statics: [] }
  for (const path of new Set(paths)) {
    let node = root
    const segments = path.split('/').slice(1)
    const template = path.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{path}')
    for (const segment of segments) {
      if (segment === '*') {
        node.rest = template
        break
      }
      if (segment.startsWith(':')) node = node.parameter ??= { statics: [] }
      else node = node.statics.find((child) => child.segment === segment)?.node ?? addStatic(node, segment)
    }
    if (!segments.includes('*')) node.template = template
  }
  return (url) => {
    const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
    if (start === -1) return OTHER_ROUTE
    const query = url.indexOf('?', start)
    let end = query === -1 ? url.length : query
    // One trailing slash takes the route without it, as the router does (C3: `/api/v1/content/post/`).
    if (end - start > 1 && url.charCodeAt(end - 1) === SLASH) end--
    return find(root, url, start + 1, end) ?? OTHER_ROUTE
  }
}

/** The template for `url` from `from` (just past a '/') to `end`, under `node`; static segments first, then a parameter, then a rest. */
function find(node: RouteNode, url: string, from: number, end: number): string | undefined {
  const slash = url.indexOf('/', from)
  const last = slash === -1 || slash >= end
  const segmentEnd = last ? end : slash
  for (const { segment, node: next } of node.statics) {
    if (segment.length !== segmentEnd - from || !url.startsWith(segment, from)) continue
    const found = last ? next.template : find(next, url, segmentEnd + 1, end)
    if (found) return found
  }
  if (node.parameter && segmentEnd > from) {
    const viaParameter = last ? node.parameter.template : find(node.parameter, url, segmentEnd + 1, end)
    if (viaParameter) return viaParameter
  }
  return node.rest
}

function addStatic(parent: RouteNode, segment: string): RouteNode {
  const node: RouteNode = { statics: [] }
  parent.statics.push({ segment, node })
  return node
}
