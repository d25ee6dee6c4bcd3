import { ConfigError } from '../config'
import { EmbeddedDatabaseError } from '../db/embedded'
import { NotEmptyError } from '../demo/seed-demo'
import { ExtensionLoadError } from '../hooks/loader'
import { PortInUseError } from '../http/serve'

/** Expected failures a person can act on: their message is the whole line. */
const EXPECTED = [ConfigError, EmbeddedDatabaseError, NotEmptyError, ExtensionLoadError, PortInUseError]

/** How long a failed start waits for what it had set up to stop (an embedded PostgreSQL stops in about a second). */
const CLEANUP_MS = 10_000

/** The exit status of a process ended by each signal a command may stop on while it starts (128 + its number). */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const

/**
 * Runs a command-line entry point. Whatever stops it before `main` has resolved (the service is serving, the
 * command is done) is one line on stderr and exit status 1, a fault thrown outside `main`'s promises too: a
 * child process that cannot be spawned reports it as an uncaught exception, and the command would hang.
 * What `main` set up and hands to `onFailure` (an embedded PostgreSQL) is stopped first, whatever the
 * fault: one thrown outside `main` leaves it nothing to clean up itself. Once it is stopping, nothing more
 * is said: a fault that the stop itself causes (a statement cut off) is not a second line.
 *
 * With `stopOnSignals`, one of those signals while it starts (before `main` has installed a handler of its
 * own for it) stops what it had set up the same way, with one line and 128 + the signal's number: a
 * `docker stop` during a first start (migrations, the demo) would otherwise end the process at once and
 * leave its embedded PostgreSQL running. With nothing set up yet (a worker or `bun run dev`'s spare, which
 * never own a database), the signal ends the process as it would have without this. The same signal again
 * while it stops ends it at once. Interactive commands (`bun run psql`) leave SIGINT to their child. A
 * command that ends by itself (`bun run migrate`) installs no handler of its own: a signal stops it so at
 * any time, its line saying so without `while starting` (`during: ''`).
 * @example runCommand(async (onFailure) => { const db = await start(); onFailure(() => db.stop()); … }, { stopOnSignals: ['SIGTERM'] })
 */
export function runCommand(
  main: (onFailure: (cleanup: () => Promise<unknown>) => void) => Promise<void>,
  { stopOnSignals = [] as (keyof typeof SIGNAL_EXIT)[], during = 'while starting' } = {},
): void {
  const cleanups: (() => Promise<unknown>)[] = []
  let stopping: string | undefined
  const stop = async (why: string, line: string, code: number) => {
    if (stopping) return
    stopping = why
    console.error(`vitrine: ${line}`)
    await Promise.race([Promise.allSettled(cleanups.map((cleanup) => cleanup())), Bun.sleep(CLEANUP_MS)])
    process.exit(code)
  }
  const fail = (error: unknown) => stop('fault', describeFailure(error), 1)
  const signalled = Object.fromEntries(stopOnSignals.map((signal) => [signal, () => onSignal(signal)]))
  const forget = () => {
    for (const [signal, listener] of Object.entries(signalled)) process.off(signal, listener)
  }
  const onSignal = (signal: keyof typeof SIGNAL_EXIT) => {
    // main's own handler, once installed, stops the service its way.
    if (process.listenerCount(signal) > 1) return
    if (stopping === signal) process.exit(SIGNAL_EXIT[signal])
    if (!stopping && cleanups.length === 0) {
      forget()
      process.kill(process.pid, signal)
      return
    }
    void stop(signal, `stopped by ${signal}${during ? ` ${during}` : ''}.`, SIGNAL_EXIT[signal])
  }
  for (const [signal, listener] of Object.entries(signalled)) process.on(signal, listener)
  process.on('uncaughtException', fail)
  process.on('unhandledRejection', fail)
  main((cleanup) => cleanups.push(cleanup)).then(() => {
    process.off('uncaughtException', fail)
    process.off('unhandledRejection', fail)
    forget()
  }, fail)
}

function describeFailure(error: unknown): string {
  if (EXPECTED.some((kind) => error instanceof kind)) return (error as Error).message
  const code = (error as { code?: unknown })?.code
  if (code === 'ECONNREFUSED' || code === 'CONNECT_TIMEOUT') return `cannot reach the database (${code}).`
  const message = error instanceof Error ? error.message : String(error)
  return `could not start: ${message.split('\n')[0]}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`
}
