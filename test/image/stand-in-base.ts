/**
 * A stand-in for the official `oven/bun:1` and `oven/bun:1-slim` images, which
 * no registry reachable from here serves. Made as theirs are: a Debian bookworm
 * root filesystem (`debootstrap --variant=minbase`, from the Debian mirror apt
 * uses), Bun's own binary (taken from its npm package, the same build the
 * official images copy: x64-baseline or aarch64), `bunx` and the `node`
 * fallback linked to it, the user `bun` (uid and gid 1000, home /home/bun),
 * their entry point, and their defaults: root, WORKDIR /home/bun/app,
 * CMD ["/usr/local/bin/bun"]. The slim one is on Debian's slim image, which
 * has no documentation, manual pages or translations, and dpkg told to
 * install none.
 *
 * Both root filesystems are kept as tarballs in the cache folder, and imported
 * again whenever an image is missing from podman's storage.
 */
import { existsSync } from 'node:fs'
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { arch } from 'node:os'
import { join } from 'node:path'
import { execute, requireCommands } from './command'
import type { Podman } from './podman'

const VARIANTS = [
  { tag: 'oven/bun:1', suffix: '' },
  { tag: 'oven/bun:1-slim', suffix: '-slim' },
]
export const BASE_TAGS = VARIANTS.map((variant) => variant.tag)

/** Names what the stand-in is made of; a change of recipe makes a new one. */
const RECIPE = 2
const SUITE = 'bookworm'
const LABEL = 'vitrine.stand-in'

/** The npm package that holds the Bun binary the official image of each architecture has. */
const BUN_PACKAGES: Record<string, string> = { x64: '@oven/bun-linux-x64-baseline', arm64: '@oven/bun-linux-aarch64' }

/** Their entry point: a first argument that is an option, or no command by that name, is handed to bun. */
const ENTRYPOINT_SCRIPT = `#!/bin/sh
set -e
if [ "\${1#-}" != "\${1}" ] || [ -z "$(command -v "\${1}")" ]; then
  set -- bun "$@"
fi
exec "$@"
`

/** What Debian's slim images leave out (as their dpkg configuration says), copyright notices kept. */
const SLIM_DPKG_CONFIG = `path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
`

const IMAGE_SETTINGS = [
  'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bun-node-fallback-bin',
  'ENV BUN_RUNTIME_TRANSPILER_CACHE_PATH=0',
  'ENV BUN_INSTALL_BIN=/usr/local/bin',
  'WORKDIR /home/bun/app',
  'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]',
  'CMD ["/usr/local/bin/bun"]',
]

export type BaseOutcome = 'made' | 'imported' | 'cached'

/**
 * Makes sure both tags name the stand-ins for the running Bun version: already
 * there (`cached`), imported from the kept tarballs (`imported`), or made anew (`made`).
 * @example await ensureStandInBase(podman, cacheDir, console.log)
 */
export async function ensureStandInBase(podman: Podman, cacheDir: string, log: (line: string) => void): Promise<BaseOutcome> {
  const bunPackage = BUN_PACKAGES[arch()]
  if (!bunPackage) throw new Error(`The stand-in for oven/bun is made for x64 and arm64 only, not ${arch()}.`)
  const key = `${SUITE}-bun-${Bun.version}-${arch()}-r${RECIPE}`
  const labels = await Promise.all(BASE_TAGS.map((tag) => imageLabel(podman, tag)))
  if (labels.every((label) => label === key)) return 'cached'

  const tarball = (suffix: string) => join(cacheDir, 'base', `${key}${suffix}.tar`)
  let outcome: BaseOutcome = 'imported'
  if (!VARIANTS.every((variant) => existsSync(tarball(variant.suffix)))) {
    log(`making the stand-in base ${key} (debootstrap and Bun from npm: a minute or two, once)`)
    await makeRootTarballs(tarball(''), tarball('-slim'), `${bunPackage}@${Bun.version}`)
    await removeOtherTarballs(join(cacheDir, 'base'), key)
    outcome = 'made'
  }
  const changes = [...IMAGE_SETTINGS, `LABEL ${LABEL}=${key}`].flatMap((change) => ['--change', change])
  for (const variant of VARIANTS) await podman.run(['import', ...changes, tarball(variant.suffix), variant.tag])
  return outcome
}

async function imageLabel(podman: Podman, tag: string): Promise<string | undefined> {
  const { code, stdout } = await podman.run(['image', 'inspect', '--format', `{{ index .Config.Labels "${LABEL}" }}`, tag], { allowFailure: true })
  return code === 0 ? stdout.trim() : undefined
}

async function makeRootTarballs(tarball: string, slimTarball: string, bunPackage: string): Promise<void> {
  requireCommands(['debootstrap', 'chroot', 'npm'])
  const workDir = join(tarball, '..')
  await mkdir(workDir, { recursive: true })
  const scratch = await mkdtemp(join(workDir, 'making-'))
  const root = join(scratch, 'rootfs')
  try {
    await execute(['debootstrap', '--variant=minbase', SUITE, root, await debianMirror()])
    await installBun(root, scratch, bunPackage)
    await writeFile(join(root, 'usr/local/bin/docker-entrypoint.sh'), ENTRYPOINT_SCRIPT)
    await chmod(join(root, 'usr/local/bin/docker-entrypoint.sh'), 0o755)
    await execute(['chroot', root, 'groupadd', 'bun', '--gid', '1000'])
    await execute(['chroot', root, 'useradd', 'bun', '--uid', '1000', '--gid', 'bun', '--shell', '/bin/sh', '--create-home'])
    await mkdir(join(root, 'home/bun/app'), { recursive: true })
    await execute(['chroot', root, '/usr/local/bin/bun', '--version'])
    // What debootstrap downloaded is no part of the image.
    await execute(['sh', '-c', 'rm -rf var/cache/apt/archives/*.deb var/lib/apt/lists/*'], { cwd: root })
    await writeTarball(root, tarball)
    await slim(root)
    await writeTarball(root, slimTarball)
  } finally {
    // --one-file-system: a failed debootstrap may leave /proc mounted inside.
    await execute(['rm', '-rf', '--one-file-system', scratch], { allowFailure: true })
  }
}

/** Stand-ins of other Bun versions or recipes. */
async function removeOtherTarballs(folder: string, key: string): Promise<void> {
  const kept = VARIANTS.map((variant) => `${key}${variant.suffix}.tar`)
  for (const name of await readdir(folder)) if (name.endsWith('.tar') && !kept.includes(name)) await rm(join(folder, name))
}

async function writeTarball(root: string, tarball: string): Promise<void> {
  await execute(['tar', '--numeric-owner', '-C', root, '-cf', `${tarball}.part`, '.'])
  await rename(`${tarball}.part`, tarball)
}

/** Removes what Debian's slim image does not have, and keeps later installs from adding it. */
async function slim(root: string): Promise<void> {
  await writeFile(join(root, 'etc/dpkg/dpkg.cfg.d/docker'), SLIM_DPKG_CONFIG)
  const script = [
    'find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete',
    'find usr/share/doc -mindepth 1 -type d -empty -delete',
    'rm -rf usr/share/groff/* usr/share/info/* usr/share/linda/* usr/share/lintian/* usr/share/locale/* usr/share/man/*',
  ]
  await execute(['sh', '-c', script.join(' && ')], { cwd: root })
}

/** Bun's binary from its npm package (no install script runs), plus `bunx` and the `node` fallback. */
async function installBun(root: string, scratch: string, bunPackage: string): Promise<void> {
  const { stdout } = await execute(['npm', 'pack', '--silent', bunPackage, '--pack-destination', scratch])
  await execute(['tar', '-xzf', join(scratch, stdout.trim().split('\n').at(-1)!), '-C', scratch])
  const bun = join(root, 'usr/local/bin/bun')
  await copyFile(join(scratch, 'package/bin/bun'), bun)
  await chmod(bun, 0o755)
  await symlink('/usr/local/bin/bun', join(root, 'usr/local/bin/bunx'))
  await mkdir(join(root, 'usr/local/bun-node-fallback-bin'))
  await symlink('/usr/local/bin/bun', join(root, 'usr/local/bun-node-fallback-bin/node'))
}

/**
 * The Debian mirror apt uses here: the first source for bookworm in
 * /etc/apt/sources.list or /etc/apt/sources.list.d (one-line or deb822), else
 * the first that serves a Debian archive.
 */
export async function debianMirror(): Promise<string> {
  const files = ['/etc/apt/sources.list']
  const folder = '/etc/apt/sources.list.d'
  if (existsSync(folder)) files.push(...(await readdir(folder)).filter((name) => /\.(list|sources)$/.test(name)).sort().map((name) => join(folder, name)))
  const sources: { uri: string; suites: string[] }[] = []
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => '')
    sources.push(...(file.endsWith('.sources') ? deb822Sources(text) : oneLineSources(text)))
  }
  const chosen = sources.find((source) => source.suites.includes(SUITE)) ?? sources.find((source) => /\/debian\/?$/.test(source.uri))
  if (!chosen) throw new Error(`No Debian source in ${files.join(', ')}: debootstrap needs the mirror apt uses.`)
  return chosen.uri
}

function oneLineSources(text: string): { uri: string; suites: string[] }[] {
  return text.split('\n').flatMap((line) => {
    const match = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line)
    return match ? [{ uri: match[1], suites: [match[2]] }] : []
  })
}

function deb822Sources(text: string): { uri: string; suites: string[] }[] {
  return text.split(/\n\s*\n/).flatMap((paragraph) => {
    const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'im').exec(paragraph)?.[1].trim().split(/\s+/) ?? []
    const uri = field('URIs')[0]
    return field('Types').includes('deb') && uri ? [{ uri, suites: field('Suites') }] : []
  })
}
