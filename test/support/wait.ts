/**
 * Waits for something to become true, checking it again every few
 * milliseconds: tests wait for an event (a row in pg_stat_activity, a port
 * that closes), never for a fixed time. Fails with `what` when it does not
 * happen within `timeoutMs`.
 * @example await waitFor('the statement waits on the lock', async () => (await lockWaiters(db)).length === 1)
 */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`Waited ${timeoutMs} ms in vain for this: ${what}`)
    await Bun.sleep(10)
  }
}
