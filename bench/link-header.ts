/**
 * Reading an RFC 8288 `Link` header, as a client of the list endpoint would:
 * bench/sizes.ts follows its `rel="next"` link to measure cursor pages.
 */

export interface Link {
  target: string
  /** The relation types, lowercased: `rel="next last"` names two. */
  rels: string[]
}

/** One link-value: `<target>` and its parameters. Commas inside `<…>` or inside a quoted value do not end it. */
const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^;,=\s]+\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^;,\s]*))?)*)/g
const LINK_PARAM = /;\s*([^;,=\s]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,\s]*)))?/g

/**
 * The links of a `Link` header, in order. Only the first `rel` of a link counts (RFC 8288 §3.3).
 * @example parseLinks('<https://a.example/p?after=x>; rel="next", </p?page=1>; rel=first')
 *   // [{ target: 'https://a.example/p?after=x', rels: ['next'] }, { target: '/p?page=1', rels: ['first'] }]
 */
export function parseLinks(header: string): Link[] {
  return [...header.matchAll(LINK_VALUE)].map(([, target, params]) => {
    const rel = [...params.matchAll(LINK_PARAM)].find(([, name]) => name.toLowerCase() === 'rel')
    const value = rel ? (rel[2]?.replace(/\\(.)/g, '$1') ?? rel[3] ?? '') : ''
    return { target: target.trim(), rels: value.toLowerCase().split(/\s+/).filter(Boolean) }
  })
}

/**
 * The target of the first link with relation `rel`, resolved against `base` (a target may be relative), or undefined.
 * @example findLink(response.headers.get('link'), 'next', response.url)
 */
export function findLink(header: string | null, rel: string, base: string): URL | undefined {
  const link = parseLinks(header ?? '').find((candidate) => candidate.rels.includes(rel))
  return link ? new URL(link.target, base) : undefined
}
