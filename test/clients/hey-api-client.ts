/**
 * What a user of @hey-api/openapi-ts writes. The SDK is generated into
 * ./generated/hey-api by test/generated-clients.test.ts, which compiles this
 * file under --strict and calls it against a live service.
 */
import { deleteContent, getContent, listContent } from './generated/hey-api/sdk.gen'
import { createClient } from './generated/hey-api/client'

export async function readWithHeyApi(baseUrl: string) {
  const client = createClient({ baseUrl })
  const list = await listContent({ client, path: { type: 'post' }, query: { lang: 'fr', per_page: 10 } })
  // @ts-expect-error per_page is an integer, not a string
  void listContent({ client, path: { type: 'post' }, query: { per_page: '10' } }).catch(() => {})
  const first = list.data?.data.find((item) => item !== null)
  const minutes: number | undefined = first?.reading_time_minutes
  // @ts-expect-error excerpt may be absent: the installed extension declares that it removes it
  const excerpt: string | null = first!.excerpt
  void excerpt
  const single = await getContent({ client, path: { type: 'post', slug: 'hello' } })
  const missing = await getContent({ client, path: { type: 'post', slug: 'nope' } })
  const refused = await deleteContent({ client, path: { type: 'post', slug: 'hello' } })
  return {
    list: [list.response?.status, first?.title, minutes, list.data?.meta.per_page],
    single: [single.response?.status, single.data?.data?.slug],
    missing: [missing.response?.status, missing.error?.error],
    refused: [refused.response?.status, refused.error?.error, refused.response?.headers.get('allow')],
  }
}
