import type { Subprocess } from 'bun'
import { join } from 'node:path'
import { waitFor } from './wait'
import { removeAtEnd } from './leftovers'

export const ROOT = join(import.meta.dir, '..', '..')

/** The environment of the test process without anything that points at a database. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(DATABASE_URL|TEST_DATABASE_URL|DATA_DIR|PORT|PG\w*)$/.test(key)) env[key] = value
  }
  return { ...env, ...extra }
}

export interface RunningService {
  url: string
  process: Subprocess<'ignore', 'pipe', 'pipe'>
  /** Everything the process printed so far. */
  output(): string
  /** Waits until the output matches `pattern` (fails if the process exits first, or after `timeoutMs`). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>
}

/**
 * Runs `bun run start` (or `script`: `dev`) as a user would and waits until it says it is serving.
 * With `direct`, runs `bun src/main.ts` itself, with no `bun run` in between: a SIGKILL then kills the
 * service, as a crash would.
 * @example const service = await startService({ DATA_DIR: dir, PORT: '0' })
 */
export async function startService(env: Record<string, string>, { timeoutMs = 60_000, keepOutput = true, cwd = ROOT, script = 'start', direct = false } = {}): Promise<RunningService> {
  const argv = direct ? [process.execPath, join(ROOT, 'src', 'main.ts')] : ['bun', 'run', '--silent', script]
  const child = Bun.spawn(argv, { cwd, env: cleanEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  // Registered at once, not once serving: started at a file's top level, it must not outlive a `bun test -t`
  // run that skips the file's afterAll, nor a run stopped by a signal while it starts (it would go on
  // writing its cluster into a folder already removed).
  const registered = removeAtEnd(async () => {
    child.kill('SIGTERM')
    await Promise.race([child.exited, Bun.sleep(5000)])
  })
  let text = ''
  let started = false
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    // A long soak logs too much to keep: with keepOutput false, only what came before the start is kept.
    for await (const chunk of stream) if (keepOutput || !started) text += decoder.decode(chunk, { stream: true })
  }
  void collect(child.stdout)
  void collect(child.stderr)
  const waitForOutput = async (pattern: RegExp, ms = 30_000) => {
    try {
      await waitFor(`output matching ${pattern}`, () => {
        if (child.exitCode !== null && !pattern.test(text)) throw new Error(`The service exited (${child.exitCode}) before printing ${pattern}`)
        return pattern.test(text)
      }, ms)
    } catch (error) {
      throw new Error(`${(error as Error).message}. It printed:\n${text}`)
    }
  }
  try {
    await waitForOutput(/"url":"http[^"]+"/, timeoutMs)
  } catch (error) {
    registered.done()
    // SIGTERM first: `bun run` passes it on to the service; a SIGKILL would end `bun run` alone and leave the service running.
    child.kill('SIGTERM')
    if ((await Promise.race([child.exited, Bun.sleep(5000).then(() => 'waited')])) === 'waited') child.kill('SIGKILL')
    throw new Error(`The service did not start. ${(error as Error).message}`)
  }
  const url = /"url":"(http[^"]+)"/.exec(text)![1]
  started = true
  return {
    url,
    process: child,
    output: () => text,
    waitForOutput,
    stop: async (signal = 'SIGTERM') => {
      registered.done()
      child.kill(signal)
      return child.exited
    },
  }
}

/** Runs a `bun run …` script to its end. */
export async function runScript(script: string, env: Record<string, string>, args: string[] = []) {
  const child = Bun.spawn(['bun', 'run', '--silent', script, ...args], { cwd: ROOT, env: cleanEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { stdout, stderr, code }
}
