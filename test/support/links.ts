/**
 * The `Link` header as rel → URL (RFC 8288: `<url>; rel="name"`, comma-separated).
 * @example links(response.headers).next
 */
export function links(headers: Headers): Record<string, string> {
  const header = headers.get('link')
  if (header === null) return {}
  return Object.fromEntries(
    header.split(/,\s*(?=<)/).map((part) => {
      const match = /^<([^>]*)>;\s*rel="([^"]+)"$/.exec(part.trim())
      if (!match) throw new Error(`not a link: ${part}`)
      return [match[2], match[1]]
    }),
  )
}
