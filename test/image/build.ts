/**
 * Builds the project's Dockerfile, unchanged, with podman. `--format docker`:
 * podman's default format (OCI) has no HEALTHCHECK and would drop it.
 * `--pull=never`: the base images are the local stand-ins.
 *
 * Each named stage (`FROM … AS name`) is built and tagged first, so that its
 * image is no dangling one: pruning after the build then removes the layers of
 * earlier builds (whole copies under vfs) but keeps every stage's cache.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Podman } from './podman'

export interface BuildOptions {
  /** The build context: the repository. */
  root: string
  image: string
  cacheDir: string
  /** Remove the images of earlier builds first, so that every layer is built anew (a cold build). */
  noCache: boolean
}

/** @example await buildImage(podman, { root, image: 'localhost/vitrine:image-test', cacheDir, noCache: false }) */
export async function buildImage(podman: Podman, options: BuildOptions): Promise<void> {
  const build = ['build', '--format', 'docker', '--network=host', '--pull=never', ...(await extraCaMount(options.cacheDir))]
  const dockerfile = await readFile(join(options.root, 'Dockerfile'), 'utf8')
  const stages = [...dockerfile.matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((match) => match[1])
  const stageTags = stages.map((stage) => `${options.image}-${stage}`)
  if (options.noCache) {
    // Without any layer of an earlier build: a cold build (the base stays).
    await podman.run(['rmi', '--force', '--ignore', options.image, ...stageTags])
    await podman.run(['image', 'prune', '--force'])
  }
  for (const [index, stage] of stages.entries()) await podman.run([...build, '--target', stage, '--tag', stageTags[index], options.root])
  await podman.run([...build, '--tag', options.image, options.root])
  await podman.run(['image', 'prune', '--force'])
}

/**
 * A machine whose Node and Bun trust an extra certificate authority (TLS to the
 * npm registry goes through a proxy that re-signs it) says so in
 * NODE_EXTRA_CA_CERTS; `bun install` in the build must trust it too. It is
 * mounted, with a bunfig.toml that names it, over /root during the build's RUN
 * steps (the install runs as root), and so stays out of the image.
 */
async function extraCaMount(cacheDir: string): Promise<string[]> {
  const caFile = process.env.NODE_EXTRA_CA_CERTS
  if (!caFile) return []
  const home = join(cacheDir, 'build-home')
  await mkdir(home, { recursive: true })
  await copyFile(caFile, join(home, 'extra-ca.crt'))
  await writeFile(join(home, '.bunfig.toml'), '[install]\ncafile = "/root/extra-ca.crt"\n')
  return ['--volume', `${home}:/root:ro`]
}
