import { afterAll, expect, test } from 'bun:test'
import { extensionTestKit } from '#vitrine/extension/testing'

const kit = await extensionTestKit({ extensions: `${import.meta.dir}/members-only-excerpt.ts` })
afterAll(() => kit.close())

const post = { type: 'post', slug: 'shipping-a-content-api' }

test('removes excerpt from a request without X-Member, and varies on it', async () => {
  const anonymous = await kit.serve(post)
  expect(anonymous.item).not.toHaveProperty('excerpt')
  expect(anonymous.headers.get('vary')).toBe('x-member')
})

test('keeps it for a member, though the answer without it is kept (C38)', async () => {
  await kit.item(post)
  expect((await kit.item(post, { headers: { 'X-Member': 'yes' } }))?.excerpt).toBe('Shipping a content API: a short summary in English.')
})
