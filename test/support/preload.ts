import { plugin } from 'bun'
import { afterAll, beforeEach, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { provideExtensionModule } from '../../src/hooks/extension-alias'
import { provisionCluster, removeEmbeddedClusterNow, teardownCluster } from './database'
import { removeLeftovers, stopRun, whileRunning } from './leftovers'

// Bun 1.4.5 does not apply bunfig.toml's `[test] timeout` (a test sleeping 6 s timed out at 5 s):
// set here. On a loaded 2-core machine a test that builds a random site takes more than 5 s, and a
// test that times out goes on writing into the next one's database.
setDefaultTimeout(30_000)

// Not awaited yet: a signal that comes while the cluster is being made waits for it, then removes it.
const provisioned = provisionCluster()
// Dropping every test database of a run takes seconds on a loaded machine: more than the default 5 s a hook gets.
// First the clusters a file started and did not remove (its afterAll skipped by `bun test -t`), the standby
// among them, whose primary is this run's cluster.
afterAll(async () => {
  await removeLeftovers()
  await teardownCluster()
}, { timeout: 60_000 })
// A run stopped by SIGTERM or SIGHUP (a cancelled CI job; `bun run test` passes them on to its shards)
// ends as that hook would: bun test exits at once on them, and the embedded PostgreSQL kept running.
for (const [signal, number] of [['SIGTERM', 15], ['SIGHUP', 1]] as const) {
  process.once(signal, () => {
    void (async () => {
      stopRun()
      await provisioned.catch(() => {})
      try {
        removeEmbeddedClusterNow()
      } catch {
        // Not made, or gone already.
      }
      await removeLeftovers().catch(() => {})
      await teardownCluster().catch(() => {})
      // What the tests still running registered meanwhile.
      await removeLeftovers().catch(() => {})
      process.exit(128 + number)
    })()
  })
}

await provisioned
// Once a signal came, no test starts: the run must not end by itself before the handler has removed the cluster
// (bun test does not wait for the last hook then).
beforeEach(() => whileRunning())

// An extension's test in a folder outside this repository (EXTENSIONS_DIR=/srv/extensions, run with
// `bun test /srv/extensions`) has no package.json of ours above it: give it both names as the loader gives
// extensions `#vitrine/extension` (src/hooks/extension-alias.ts).
provideExtensionModule()
plugin({
  name: 'vitrine-extension-testing-module',
  setup(build) {
    build.module('#vitrine/extension/testing', () => ({ contents: `export * from ${JSON.stringify(join(import.meta.dir, 'extension-testing.ts'))}`, loader: 'ts' }))
  },
})
