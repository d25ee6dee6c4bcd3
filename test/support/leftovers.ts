/**
 * Clusters a helper started (the standby, the publisher) that the run must not
 * leave running. A test file removes them in its `afterAll`; but `bun test -t`
 * runs a file's top level and skips its `afterAll` when none of its tests
 * match, and such a cluster, a daemon, outlived the run. The preload removes
 * whatever is still here at the end of every run, before the test cluster.
 * @example const registered = removeAtEnd(() => standby.remove()); …; registered.done()
 */
const pending = new Set<() => Promise<void>>()

/** Has `remove` run at the end of the run unless `done()` said it ran already. */
export function removeAtEnd(remove: () => Promise<void>): { done(): void } {
  pending.add(remove)
  return { done: () => void pending.delete(remove) }
}

/** Runs what is still registered (the preload's last hook); one failing does not keep the others from running. */
export async function removeLeftovers(): Promise<void> {
  const removals = [...pending]
  pending.clear()
  for (const remove of removals) await remove().catch(() => {})
}
