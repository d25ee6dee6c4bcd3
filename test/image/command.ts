/** What a finished command printed, and its exit code. */
export interface CommandResult {
  code: number
  stdout: string
  stderr: string
}

/** A command that had to succeed did not; the message carries its last lines of output. */
export class CommandError extends Error {}

export interface CommandOptions {
  env?: Record<string, string | undefined>
  cwd?: string
  /** Resolve with a non-zero exit code instead of failing. */
  allowFailure?: boolean
}

/**
 * Runs a program to its end and collects its output; a non-zero exit fails
 * with the command and the end of what it printed.
 * @example const { stdout } = await execute(['podman', 'images'])
 */
export async function execute(argv: string[], options: CommandOptions = {}): Promise<CommandResult> {
  const child = Bun.spawn(argv, { cwd: options.cwd, env: options.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0 && !options.allowFailure) {
    throw new CommandError(`\`${argv.join(' ')}\` exited with ${code}:\n${lastLines(`${stdout}\n${stderr}`, 40)}`)
  }
  return { code, stdout, stderr }
}

/** The last `count` non-empty lines of a command's output. */
export function lastLines(text: string, count: number): string {
  return text.split('\n').filter((line) => line.trim()).slice(-count).join('\n')
}

/** Fails with what to install when a program the image test needs is missing. */
export function requireCommands(names: string[]): void {
  const missing = names.filter((name) => !Bun.which(name))
  if (missing.length) {
    throw new CommandError(`${missing.join(', ')} not found. On Debian: apt-get install -y podman runc debootstrap uidmap slirp4netns fuse-overlayfs (and npm for Bun's binary).`)
  }
}
