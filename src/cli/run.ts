import { ConfigError } from '../config'
import { EmbeddedDatabaseError } from '../db/embedded'
import { NotEmptyError } from '../demo/seed-demo'
import { ExtensionLoadError } from '../hooks/loader'
import { PortInUseError } from '../http/serve'

/** Expected failures a person can act on: one line, no stack trace. */
const EXPECTED = [ConfigError, EmbeddedDatabaseError, NotEmptyError, ExtensionLoadError, PortInUseError]

/**
 * Runs a command-line entry point: an expected failure prints its one-line
 * message, anything else its stack, and both exit with status 1.
 * @example runCommand(async () => { … })
 */
export function runCommand(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const expected = EXPECTED.some((kind) => error instanceof kind)
    const code = (error as { code?: string })?.code
    if (expected) console.error(`vitrine: ${(error as Error).message}`)
    else if (code === 'ECONNREFUSED' || code === 'CONNECT_TIMEOUT') console.error(`vitrine: cannot reach the database (${code}).`)
    else console.error(error)
    process.exit(1)
  })
}
