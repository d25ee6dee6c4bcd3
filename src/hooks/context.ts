import type { FilterContext } from './extension'

export interface RequestContext {
  context: FilterContext
  /** The request headers callbacks have read (lower case), for `Vary` (C30). */
  headersRead: Set<string>
}

/** What the route knows of the request beyond the request itself. */
export type RouteFacts = Pick<FilterContext, 'language' | 'defaultLanguage' | 'route' | 'publicUrl'>

/**
 * The third argument of the filter callbacks, for one request.
 * @example const { context, headersRead } = createFilterContext(request, { language: 'fr', defaultLanguage: 'en', route: 'service.api.content.index', publicUrl: 'https://cms.example.com' })
 */
export function createFilterContext(request: Request, { language, defaultLanguage, route, publicUrl }: RouteFacts): RequestContext {
  const headersRead = new Set<string>()
  const memo = new Map<string, Promise<unknown>>()
  const headers = Object.freeze({
    get(name: string) {
      headersRead.add(name.toLowerCase())
      return request.headers.get(name)
    },
    has(name: string) {
      headersRead.add(name.toLowerCase())
      return request.headers.has(name)
    },
  })
  const context: FilterContext = Object.freeze({
    request: Object.freeze({ method: request.method, url: request.url, headers }),
    language,
    defaultLanguage,
    route,
    publicUrl,
    once<T>(key: string, compute: () => T | Promise<T>): Promise<T> {
      if (!memo.has(key)) memo.set(key, Promise.resolve().then(compute))
      return memo.get(key) as Promise<T>
    },
  })
  return { context, headersRead }
}
