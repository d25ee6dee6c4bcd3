/**
 * What the helpers start that the run must not leave running: the standby and
 * the publisher (PostgreSQL clusters), Varnish, the services. A test file
 * removes them in its `afterAll`; but `bun test -t` runs a file's top level
 * and skips its `afterAll` when none of its tests match, and what the file
 * started outlived the run. The preload removes whatever is still here at the
 * end of every run, before the test cluster.
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
