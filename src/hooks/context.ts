import type { FilterContext } from './extension'

/**
 * Everything the callbacks of one request read of it, in the order first read
 * (C30, C38): each read has a name and the value the request gave it.
 * `header:x-member` is a header's value, `has:x-member` only whether it is
 * there, `url` and `method` the request's own. `volatile` is set when a
 * callback that declared its output depends on more than the request and the
 * entry ran (src/hooks/extension.ts, `volatile`).
 */
export interface RequestReads {
  names: string[]
  values: (string | null)[]
  volatile: boolean
}

export interface RequestContext {
  context: FilterContext
  reads: RequestReads
}

/** What the route knows of the request beyond the request itself. */
export type RouteFacts = Pick<FilterContext, 'language' | 'defaultLanguage' | 'route' | 'publicUrl'>

/**
 * The value a request gives a read's name (see RequestReads): what a kept
 * answer's reads are compared with.
 * @example readOf(request, 'has:x-member') // '1' or '0'
 */
export function readOf(request: Request, name: string): string | null {
  if (name === 'url') return request.url
  if (name === 'method') return request.method
  if (name.startsWith('has:')) return request.headers.has(name.slice(4)) ? '1' : '0'
  return request.headers.get(name.slice(7))
}

/**
 * The third argument of the filter callbacks, for one request, and the record
 * of what they read through it.
 * @example const { context, reads } = createFilterContext(request, { language: 'fr', defaultLanguage: 'en', route: 'service.api.content.index', publicUrl: 'https://cms.example.com' })
 */
export function createFilterContext(request: Request, { language, defaultLanguage, route, publicUrl }: RouteFacts): RequestContext {
  const reads: RequestReads = { names: [], values: [], volatile: false }
  /** The value the request gives `name`, recorded the first time it is read. */
  const record = (name: string): string | null => {
    const index = reads.names.indexOf(name)
    if (index !== -1) return reads.values[index]!
    // The value first: a name the request cannot read (an invalid header name) throws before it is recorded.
    const value = readOf(request, name)
    reads.names.push(name)
    reads.values.push(value)
    return value
  }
  const memo = new Map<string, Promise<unknown>>()
  const headers = Object.freeze({
    get(name: string) {
      return record(`header:${name.toLowerCase()}`)
    },
    has(name: string) {
      return record(`has:${name.toLowerCase()}`) === '1'
    },
  })
  const requestView = Object.freeze({
    get method() {
      return record('method')!
    },
    get url() {
      return record('url')!
    },
    headers,
  })
  const context: FilterContext = Object.freeze({
    request: requestView,
    language,
    defaultLanguage,
    route,
    publicUrl,
    once<T>(key: string, compute: () => T | Promise<T>): Promise<T> {
      if (!memo.has(key)) memo.set(key, Promise.resolve().then(compute))
      return memo.get(key) as Promise<T>
    },
  })
  return { context, reads }
}

/**
 * The request headers the callbacks read, lower case, in the order first read:
 * what `Vary` names (C30).
 * @example headersRead({ names: ['has:x-member', 'url'], values: ['1', '…'], volatile: false }) // ['x-member']
 */
export function headersRead(reads: RequestReads): string[] {
  const headers: string[] = []
  for (const name of reads.names) {
    const header = name.startsWith('has:') ? name.slice(4) : name.startsWith('header:') ? name.slice(7) : null
    if (header !== null && !headers.includes(header)) headers.push(header)
  }
  return headers
}
