import { afterAll } from 'bun:test'
import { provisionCluster, teardownCluster } from './database'

await provisionCluster()
// Dropping every test database of a run takes seconds on a loaded machine: more than the default 5 s a hook gets.
afterAll(teardownCluster, { timeout: 60_000 })
