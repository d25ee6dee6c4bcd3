import { afterAll } from 'bun:test'
import { provisionCluster, teardownCluster } from './database'

await provisionCluster()
afterAll(teardownCluster)
