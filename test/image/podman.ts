/**
 * Podman with a configuration and a storage of its own, so that the image test
 * changes nothing of the machine's podman setup: CONTAINERS_CONF and
 * CONTAINERS_STORAGE_CONF point at files under the cache folder.
 *
 * What this host needs (and what a developer's machine does not mind): the
 * `vfs` storage driver, `runc` (crun fails on these cgroups), cgroups managed
 * by podman itself rather than systemd, no default ulimits, and files instead
 * of the journal for logs and events. Containers use the host's network
 * (`--network=host`, given by the callers).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execute, type CommandOptions, type CommandResult } from './command'

export interface Podman {
  /** Runs `podman …args` with the private configuration. */
  run(args: string[], options?: CommandOptions): Promise<CommandResult>
  /** The environment that selects the private configuration, for a podman started some other way. */
  env: Record<string, string | undefined>
}

/**
 * Writes the private configuration under `cacheDir` (idempotently) and returns podman bound to it.
 * @example const podman = await privatePodman('/root/.cache/vitrine-image'); await podman.run(['images'])
 */
export async function privatePodman(cacheDir: string): Promise<Podman> {
  // Run-time state on /run (a tmpfs): after a reboot podman must not believe old containers still run.
  // One folder per cache folder: two storages must not share their locks.
  const runDir = join('/run', 'vitrine-image', Bun.hash(cacheDir).toString(36))
  const containersConf = join(cacheDir, 'containers.conf')
  const storageConf = join(cacheDir, 'storage.conf')
  await mkdir(cacheDir, { recursive: true })
  await writeIfChanged(containersConf, [
    '[containers]',
    'default_ulimits = []',
    'log_driver = "k8s-file"',
    '',
    '[engine]',
    'runtime = "runc"',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    `tmp_dir = "${join(runDir, 'libpod')}"`,
    '',
  ])
  await writeIfChanged(storageConf, [
    '[storage]',
    'driver = "vfs"',
    `graphroot = "${join(cacheDir, 'storage')}"`,
    `runroot = "${join(runDir, 'storage')}"`,
    '',
  ])
  const env = { ...process.env, CONTAINERS_CONF: containersConf, CONTAINERS_STORAGE_CONF: storageConf }
  return { env, run: (args, options = {}) => execute(['podman', ...args], { ...options, env: { ...env, ...options.env } }) }
}

async function writeIfChanged(path: string, lines: string[]): Promise<void> {
  const text = lines.join('\n')
  const current = await readFile(path, 'utf8').catch(() => undefined)
  if (current !== text) await writeFile(path, text)
}
