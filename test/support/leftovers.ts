import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

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
/** The removals started, one after the other: whoever calls removeLeftovers waits for all of them. */
let removals: Promise<void> = Promise.resolve()
let stopping = false

function startRemoval(remove: () => Promise<void>): void {
  removals = removals.then(() => remove().catch(() => {}))
}

/** Has `remove` run at the end of the run unless `done()` said it ran already; at once when the run is stopping. */
export function removeAtEnd(remove: () => Promise<void>): { done(): void } {
  if (stopping) {
    startRemoval(remove)
    return { done: () => {} }
  }
  pending.add(remove)
  return { done: () => void pending.delete(remove) }
}

/**
 * A signal stops the run (the preload): bun test goes on running tests while the cluster is torn
 * down, so what they start from now on is removed as soon as it is registered, and no new folder or
 * database is made (`whileRunning`).
 */
export function stopRun(): void {
  stopping = true
}

/**
 * Returns at once, unless the run is stopping: then never, until the preload's handler ends the
 * process. A test that failed at once instead would let bun test end the run, and exit before the
 * handler has removed the cluster.
 */
export async function whileRunning(): Promise<void> {
  if (stopping) await new Promise<never>(() => {})
}

/**
 * Runs what is still registered (the preload's last hook, and its signal handler: both may run at
 * once), and waits until every removal started so far has ended; one failing does not keep the others
 * from running.
 */
export async function removeLeftovers(): Promise<void> {
  // The last registered first: a service before the folder its database is in.
  for (const remove of [...pending].reverse()) startRemoval(remove)
  pending.clear()
  for (let seen = removals; ; seen = removals) {
    await seen
    if (seen === removals) return
  }
}

/**
 * A new folder (`mkdtemp` of `prefix` under `parent`, the system's temporary folder by default),
 * removed by `remove()` or, when a run ends first (a SIGTERM, `-t` that skipped the file's
 * `afterAll`), by the preload's last hook.
 * @example const folder = await temporaryFolder('vitrine-docs-'); try { … folder.path … } finally { await folder.remove() }
 */
export async function temporaryFolder(prefix: string, parent = tmpdir()): Promise<{ path: string; remove(): Promise<void> }> {
  await whileRunning()
  const path = await mkdtemp(join(parent, prefix))
  const remove = async () => {
    // Tried again: a process stopped just before may still be writing in it (ENOTEMPTY). By hand, not with rm's
    // maxRetries, which a runtime may accept without retrying.
    for (let attempt = 1; ; attempt++) {
      try {
        return await rm(path, { recursive: true, force: true })
      } catch (error) {
        if (attempt >= 20 || !['ENOTEMPTY', 'EBUSY'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error
        await Bun.sleep(100)
      }
    }
  }
  const registered = removeAtEnd(remove)
  return {
    path,
    remove: async () => {
      registered.done()
      await remove()
    },
  }
}

/** A file a test writes where it must not stay (the working tree): removed at the end of the run unless `done()` said the test removed it. */
export function removeFileAtEnd(path: string): { done(): void } {
  return removeAtEnd(() => rm(path, { force: true }))
}

/**
 * Whether a process runs. An exited child not yet reaped (this process reaps only when the event loop
 * turns) is a zombie, which `process.kill(pid, 0)` still finds (Linux): it counts as gone.
 * @example processRuns(postgresPid) // false once it exited
 */
export function processRuns(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)?.[0]
    return state !== 'Z' && state !== 'X'
  } catch {
    // No /proc (not Linux): signal 0 says whether it exists.
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
}
