import { ConfigError } from '../config'
import { EmbeddedDatabaseError } from '../db/embedded'
import { NotEmptyError } from '../demo/seed-demo'
import { ExtensionLoadError } from '../hooks/loader'
import { PortInUseError } from '../http/serve'

/** Expected failures a person can act on: their message is the whole line. */
const EXPECTED = [ConfigError, EmbeddedDatabaseError, NotEmptyError, ExtensionLoadError, PortInUseError]

/** How long a failed start waits for what it had set up to stop (an embedded PostgreSQL stops in about a second). */
const CLEANUP_MS = 10_000

/**
 * Runs a command-line entry point. Whatever stops it before `main` has resolved (the service is serving, the
 * command is done) is one line on stderr and exit status 1, a fault thrown outside `main`'s promises too: a
 * child process that cannot be spawned reports it as an uncaught exception, and the command would hang.
 * What `main` set up and hands to `onFailure` (an embedded PostgreSQL) is stopped first, whatever the
 * fault: one thrown outside `main` leaves it nothing to clean up itself.
 * @example runCommand(async (onFailure) => { const db = await start(); onFailure(() => db.stop()); … })
 */
export function runCommand(main: (onFailure: (cleanup: () => Promise<unknown>) => void) => Promise<void>): void {
  const cleanups: (() => Promise<unknown>)[] = []
  let failing = false
  const fail = async (error: unknown) => {
    console.error(`vitrine: ${describeFailure(error)}`)
    if (failing) return
    failing = true
    await Promise.race([Promise.allSettled(cleanups.map((cleanup) => cleanup())), Bun.sleep(CLEANUP_MS)])
    process.exit(1)
  }
  process.on('uncaughtException', fail)
  process.on('unhandledRejection', fail)
  main((cleanup) => cleanups.push(cleanup)).then(() => {
    process.off('uncaughtException', fail)
    process.off('unhandledRejection', fail)
  }, fail)
}

function describeFailure(error: unknown): string {
  if (EXPECTED.some((kind) => error instanceof kind)) return (error as Error).message
  const code = (error as { code?: unknown })?.code
  if (code === 'ECONNREFUSED' || code === 'CONNECT_TIMEOUT') return `cannot reach the database (${code}).`
  const message = error instanceof Error ? error.message : String(error)
  return `could not start: ${message.split('\n')[0]}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`
}
