import type { FilterContext } from './extension'

export interface RequestContext {
  context: FilterContext
  /** The request headers callbacks have read (lower case), for `Vary` (C30). */
  headersRead: Set<string>
}

/**
 * The third argument of the filter callbacks, for one request.
 * @example const { context, headersRead } = createFilterContext(request, 'fr', 'en', 'service.api.content.index')
 */
export function createFilterContext(
  request: Request,
  language: string,
  defaultLanguage: string,
  route: FilterContext['route'],
): RequestContext {
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
    once<T>(key: string, compute: () => T | Promise<T>): Promise<T> {
      if (!memo.has(key)) memo.set(key, Promise.resolve().then(compute))
      return memo.get(key) as Promise<T>
    },
  })
  return { context, headersRead }
}
