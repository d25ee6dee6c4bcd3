/**
 * `bun run openapi:types`: writes test/support/openapi-types.ts, the
 * TypeScript types that openapi-typescript generates from our OpenAPI
 * document. The typed-client test uses them; a test fails when they are stale.
 */
import { join } from 'node:path'
import { openapiTypes } from '../test/support/openapi'

const target = join(import.meta.dir, '..', 'test', 'support', 'openapi-types.ts')
await Bun.write(target, await openapiTypes())
console.log(`Wrote ${target}.`)
process.exit(0)
