/**
 * The service as every benchmark starts it: `bun src/main.ts` of a checkout,
 * on 127.0.0.1 at a port the system picked, LOG_LEVEL=warn, no extensions
 * unless told, and the benchmark's own settings over those.
 */
import { join } from 'node:path'
import type { Sql } from '../src/db/connect'

const ROOT = join(import.meta.dir, '..')

/**
 * Settings that open the heavy lane (C47) to the whole pool: for benchmarks that measure what a
 * statement costs at 32 connections (a deep page, a search), not how the lane shares the pool
 * (bench/lanes.ts measures that). With the lane, 31 of those 32 would wait in its line.
 */
export function openLane(poolMax: number): Record<string, string> {
  return { DATABASE_HEAVY_MAX: String(poolMax), DATABASE_HEAVY_QUEUE: '100000' }
}

export interface BenchService {
  base: string
  process: ReturnType<typeof Bun.spawn>
}

export interface BenchServiceOptions {
  databaseUrl: string
  /** The checkout to run (default: this one). */
  directory?: string
  /** Settings over the defaults above (EXTENSIONS_DIR, CACHE…). */
  env?: Record<string, string>
  /** When the service counts as up (default: /healthz answers 200). */
  ready?: (base: string) => Promise<boolean>
}

/**
 * Starts the service and waits until it is up; a service that exits first fails at once.
 * @example const { base, process } = await startBenchService({ databaseUrl, env: { CACHE: 'off' } })
 */
export async function startBenchService({ databaseUrl, directory = ROOT, env = {}, ready = healthy }: BenchServiceOptions): Promise<BenchService> {
  const port = freePort()
  const service = Bun.spawn(['bun', 'src/main.ts'], {
    cwd: directory,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      EXTENSIONS_DIR: join(ROOT, 'bench', 'no-extensions'),
      ...env,
    },
    stdout: 'inherit',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) {
    // A checkout whose service cannot start (a missing dependency, a bad setting) says so at once, not after the wait.
    if (service.exitCode !== null) throw new Error(`The service of ${directory} exited (code ${service.exitCode}) before it served.`)
    if (await ready(base).catch(() => false)) return { base, process: service }
    await Bun.sleep(100)
  }
  service.kill('SIGTERM')
  throw new Error(`The service of ${directory} at ${base} did not come up.`)
}

/**
 * Waits until no connection whose application_name starts with vitrine (the services', and a
 * reference's) is running a statement on `database`, three looks in a row 200 ms apart, at most
 * `maxMs` (then says so, and the bench goes on): a service's checks at start (C18's
 * live counts, C56's kept structures: about 3.5 s of PostgreSQL's time on 100 000 entries) must not
 * share the machine with the first measurements, which a hand-written reference never pays for.
 * @example await waitForStartChecks(admin, 'vitrine_bench_100000')
 */
export async function waitForStartChecks(admin: Sql, database: string, maxMs = 60_000): Promise<void> {
  const until = performance.now() + maxMs
  let quiet = 0
  while (quiet < 3 && performance.now() < until) {
    const [{ busy }] = await admin<{ busy: number }[]>`
      select count(*)::int as busy from pg_stat_activity
      where datname = ${database} and application_name like 'vitrine%' and state = 'active' and pid <> pg_backend_pid()
    `
    quiet = busy === 0 ? quiet + 1 : 0
    if (quiet < 3) await Bun.sleep(200)
  }
  if (quiet < 3) console.warn(`bench: ${database} was not quiet for three looks within ${maxMs / 1000} s (the services' checks at start?); measuring anyway.`)
}

async function healthy(base: string): Promise<boolean> {
  return (await fetch(`${base}/healthz`)).ok
}

/** A port free right now: the operating system picks it. */
function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = server.port!
  server.stop(true)
  return port
}
