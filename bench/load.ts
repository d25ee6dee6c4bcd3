/**
 * What both halves of `bun run bench` drive a service with: wrk when it is
 * installed, else autocannon, at CONNECTIONS connections, and BENCH_SECONDS.
 */
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')
export const CONNECTIONS = 32
/** The load generator every benchmark drives the service with: wrk when installed, else autocannon. */
export const LOAD_TOOL = Bun.which('wrk') ? 'wrk' : 'autocannon'

/** The median of measurements (the mean of the middle two for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

export interface Measure {
  rps: number
  p50: number
  p99: number
  errors: number
}

/** BENCH_SECONDS: a whole number of seconds, at least 1 (default 10); anything else exits 2. */
export function readSeconds(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 10
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) {
    console.error(`bench: BENCH_SECONDS must be a whole number of seconds, at least 1, not "${text}".`)
    process.exit(2)
  }
  return Number(text)
}

/** BENCH_ROUNDS: a whole number of rounds, at least 1 (default `fallback`); anything else exits 2. */
export function readRounds(text: string | undefined, fallback = 3): number {
  if (text === undefined || text.trim() === '') return fallback
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) {
    console.error(`bench: BENCH_ROUNDS must be a whole number, at least 1, not "${text}".`)
    process.exit(2)
  }
  return Number(text)
}

/**
 * Drives `url` for `seconds` (whole: wrk refuses "0.5s" and measures nothing), with wrk's Lua
 * `wrkScript` when given, at `connections`. Throws when the tool fails or measures nothing.
 */
export async function load(tool: string, url: string, seconds: number, headers: Record<string, string> = {}, wrkScript?: string, connections = CONNECTIONS): Promise<Measure> {
  const command =
    tool === 'wrk'
      ? ['wrk', `-t${Math.min(2, connections)}`, `-c${connections}`, `-d${seconds}s`, '--latency', ...(wrkScript ? ['-s', wrkScript] : []), ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]), url]
      : ['node', join(ROOT, 'node_modules/autocannon/autocannon.js'), '-c', String(connections), '-d', String(seconds), '--json', ...Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]), url]
  const run = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe' })
  const [text, errors, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
  const measure = code === 0 ? (tool === 'wrk' ? readWrk(text) : readAutocannon(text)) : undefined
  if (!measure || !(measure.rps > 0) || !Number.isFinite(measure.p50) || !Number.isFinite(measure.p99)) {
    throw new Error(`${tool} failed on ${url} (exit ${code}):\n${text}${errors}`)
  }
  return measure
}

function readWrk(text: string): Measure {
  const ms = (label: string) => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(text)
    if (!match) return NaN
    return Number(match[1]) * (match[2] === 'us' ? 0.001 : match[2] === 's' ? 1000 : 1)
  }
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text)
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN), p50: ms('50'), p99: ms('99'), errors: non2xx + socketErrors }
}

function readAutocannon(text: string): Measure | undefined {
  try {
    const result = JSON.parse(text)
    return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx + result.timeouts }
  } catch {
    return undefined
  }
}

/** Rounded down: a ratio of 0.849 reads 0.84, never a 0.85 that missed its target. */
function hundredths(ratio: number): string {
  return (Math.floor(ratio * 100) / 100).toFixed(2)
}

export interface SideBySide {
  ours: Measure[]
  theirs: Measure[]
  /** Each round's own ratio, ours ÷ theirs: its two measurements ran back to back. */
  ratios: number[]
}

/**
 * `ours` against `theirs`, `rounds` rounds of `seconds` each, alternating which goes first (AB, BA, …).
 * A URL not yet in `warmed` is first put under load for `warmUpSeconds`, unmeasured (then added):
 * a server's first load is slower while its JIT tiers up and its connections open (the uncached
 * service took about 12 s to level off, a hand-written reference about 9). Throws when a
 * measurement has failed requests. The median of `ratios` is what the machine's drift between
 * rounds leaves alone; the ratio of the two sides' medians is not.
 */
export async function sideBySide(ours: string, theirs: string, options: { rounds: number; seconds: number; warmUpSeconds: number; warmed: Set<string> }): Promise<SideBySide> {
  for (const url of [ours, theirs]) {
    await load(LOAD_TOOL, url, options.warmed.has(url) ? 1 : options.warmUpSeconds)
    options.warmed.add(url)
  }
  const runs = { ours: [] as Measure[], theirs: [] as Measure[] }
  const urls = { ours, theirs }
  for (let round = 0; round < options.rounds; round++) {
    for (const side of round % 2 === 0 ? (['ours', 'theirs'] as const) : (['theirs', 'ours'] as const)) {
      const measure = await load(LOAD_TOOL, urls[side], options.seconds)
      if (measure.errors) throw new Error(`${measure.errors} requests failed on ${urls[side]}`)
      runs[side].push(measure)
    }
  }
  return { ...runs, ratios: runs.ours.map((measure, round) => measure.rps / runs.theirs[round]!.rps) }
}

/**
 * A report's cells for `ratios` (sideBySide's): their median, their range, and the verdict against `target` (none: no target).
 * @example ratioCells([0.8, 0.9, 0.85], 0.85) // '0.85 | 0.80–0.90 | ≥ 0.85: met'
 */
export function ratioCells(ratios: number[], target: number | null | undefined): string {
  const ratio = median(ratios)
  const verdict = target == null ? '(no target)' : `≥ ${target}: ${ratio >= target ? 'met' : 'missed'}`
  return `${hundredths(ratio)} | ${hundredths(Math.min(...ratios))}–${hundredths(Math.max(...ratios))} | ${verdict}`
}
