import type { Subprocess } from 'bun'
import type { Config } from './config'
import type { DatabaseTarget } from './db/open'
import { listenForMetrics } from './http/listen'
import { portInUse } from './http/serve'
import type { Logger } from './log'
import { registry } from './metrics/families'
import { WorkerScrapes } from './metrics/worker-scrapes'

/** Set in the environment of the processes `superviseWorkers` starts; read by config.ts. */
export const WORKER_VARIABLE = 'VITRINE_WORKER'
/** Set with it: the supervisor runs the embedded database, so the workers serve the demo's images (config.ts). */
export const DEMO_MEDIA_VARIABLE = 'VITRINE_DEMO_MEDIA'
/** Set with it by `bun run dev` in a spare: the process waits for `startSignal` (config.ts). */
export const SPARE_VARIABLE = 'VITRINE_SPARE'

/**
 * WORKERS=n (n > 1): this process prepares the database once (the embedded
 * one started and migrated here), makes sure the port is free, then runs n
 * copies of the service on that port with `reusePort`, each with its own pool,
 * cache and change listener. It forwards SIGTERM and SIGINT, waits for them,
 * restarts one that dies, and stops the embedded database last. With
 * METRICS_PORT, it serves the metrics of every worker, gathered over Bun's IPC
 * at each scrape (src/metrics/worker-scrapes.ts).
 * @example await superviseWorkers(config, log, target)
 */
export async function superviseWorkers(config: Config, log: Logger, target: DatabaseTarget): Promise<void> {
  const port = claimPort(config.host, config.port)
  const env = serviceProcessEnvironment(target, port)
  const workers = new Set<Subprocess>()
  const scrapes = new WorkerScrapes()
  let stopping = false
  const start = (index: number) => {
    const worker = spawnServiceProcess(env, (message, from) => scrapes.receive(from, message))
    workers.add(worker)
    scrapes.add(worker, (message) => worker.send(message))
    void worker.exited.then((code) => {
      workers.delete(worker)
      scrapes.remove(worker)
      if (stopping) return
      log.error('a worker exited: starting another', { worker: index, code })
      setTimeout(() => stopping || start(index), 1000)
    })
  }
  // Bound before any worker starts: a METRICS_PORT in use stops the start with nothing left running.
  const metrics = listenForMetrics(config, log, () => scrapes.gather(registry.snapshot()))
  for (let index = 1; index <= config.workers; index++) start(index)
  log.info('supervising workers', { workers: config.workers, port })

  const shutdown = async () => {
    if (stopping) return
    stopping = true
    void metrics?.stop(true)
    // SIGTERM whatever came: Ctrl-C has already sent SIGINT to every worker (one process
    // group), and a worker takes only a second signal of the same kind as "close now".
    for (const worker of workers) worker.kill('SIGTERM')
    await Promise.all([...workers].map((worker) => worker.exited))
    await target.embedded?.stop()
    log.info('stopped', { workers: config.workers })
    process.exit(0)
  }
  process.on('SIGINT', () => void shutdown())
  process.on('SIGTERM', () => void shutdown())
}

/**
 * The environment of a service process that a supervisor runs (a worker of
 * WORKERS=n, or the service `bun run dev` reloads): it serves `port` with
 * `reusePort` on the supervisor's database, and prepares nothing.
 * @example const env = serviceProcessEnvironment(target, claimPort(config.host, config.port))
 */
export function serviceProcessEnvironment(target: DatabaseTarget, port: number): Record<string, string | undefined> {
  // The database's URL: whether it is the embedded one (the demo's images served) is said apart.
  return { ...process.env, [WORKER_VARIABLE]: '1', PORT: String(port), DATABASE_URL: target.url, [DEMO_MEDIA_VARIABLE]: target.embedded ? '1' : '0' }
}

/**
 * Starts one service process (src/main.ts) with `env`; it prints to this process's output.
 * @example const worker = spawnServiceProcess(serviceProcessEnvironment(target, port))
 */
export function spawnServiceProcess(env: Record<string, string | undefined>, ipc?: (message: unknown, from: Subprocess) => void): Subprocess {
  return Bun.spawn([process.execPath, `${import.meta.dir}/main.ts`], { env, stdin: 'ignore', stdout: 'inherit', stderr: 'inherit', ...(ipc && { ipc }) })
}

/**
 * Starts a spare service process: it loads its modules, then waits for
 * `start()` before it reads anything else (extensions, the database). It goes
 * away by itself with this process (its stdin closes).
 * @example const spare = spawnSpareServiceProcess(env); …; spare.start()
 */
export function spawnSpareServiceProcess(env: Record<string, string | undefined>): { process: Subprocess<'pipe', 'inherit', 'inherit'>; start(): void } {
  const spare = Bun.spawn([process.execPath, `${import.meta.dir}/main.ts`], { env: { ...env, [SPARE_VARIABLE]: '1' }, stdin: 'pipe', stdout: 'inherit', stderr: 'inherit' })
  return {
    process: spare,
    start() {
      spare.stdin.write('start\n')
      void spare.stdin.flush()
    },
  }
}

/** In a spare: true once its supervisor says start, false when the supervisor is gone. */
export async function startSignal(): Promise<boolean> {
  const { done } = await Bun.stdin.stream().getReader().read()
  return !done
}

/**
 * Binds the port once without `reusePort`, so that a port another program
 * holds fails the start instead of being shared; returns the port (the one
 * picked when PORT is 0).
 * @example const port = claimPort('0.0.0.0', 3000)
 */
export function claimPort(hostname: string, port: number): number {
  let probe: ReturnType<typeof Bun.serve>
  try {
    probe = Bun.serve({ hostname, port, reusePort: false, fetch: () => new Response(null, { status: 503 }) })
  } catch (error) {
    throw portInUse(port, hostname, error)
  }
  const claimed = probe.port!
  probe.stop(true)
  return claimed
}
