import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from './service'
import { waitFor } from './wait'
import { removeAtEnd } from './leftovers'

/** Debian's varnishd (apt-get install varnish varnish-modules); undefined when it is not installed. */
export const VARNISHD = ['/usr/sbin/varnishd', '/usr/local/sbin/varnishd'].find((path) => existsSync(path))

export interface RunningVarnish {
  url: string
  port: number
  /** Its working folder (`-n`), for varnishstat. */
  workDir: string
  stop(): Promise<void>
}

/** A port nobody listens on now. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/**
 * A real varnishd with the shipped VCL (deploy/varnish/vitrine.vcl), its
 * backend pointed at `backendPort`, in a working folder of its own, in the
 * foreground of a child process. As root, `-j none` keeps it from switching
 * to the varnish user (which could not read the temporary folder).
 * @example const varnish = await startVarnish(port, freePort())
 */
export async function startVarnish(backendPort: number, port = freePort()): Promise<RunningVarnish> {
  if (!VARNISHD) throw new Error('varnishd is not installed')
  const dir = await mkdtemp(join(tmpdir(), 'vitrine-varnish-'))
  const shipped = await readFile(join(ROOT, 'deploy', 'varnish', 'vitrine.vcl'), 'utf8')
  const vcl = shipped.replace('.port = "3000";', `.port = "${backendPort}";`)
  if (vcl === shipped) throw new Error('deploy/varnish/vitrine.vcl no longer has `.port = "3000";` to point at the test service')
  await writeFile(join(dir, 'vitrine.vcl'), vcl)
  const child = Bun.spawn([VARNISHD, '-F', '-j', 'none', '-n', join(dir, 'work'), '-a', `127.0.0.1:${port}`, '-f', join(dir, 'vitrine.vcl'), '-s', 'malloc,64m'], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let output = ''
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk)
  }
  void collect(child.stdout)
  void collect(child.stderr)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor('varnishd answers', async () => {
      if (child.exitCode !== null) throw new Error(`varnishd exited (${child.exitCode}):\n${output}`)
      return fetch(`${url}/healthz`).then(
        () => true,
        () => false,
      )
    }, 30_000)
  } catch (error) {
    child.kill('SIGKILL')
    throw error
  }
  const stop = async () => {
    registered.done()
    child.kill('SIGTERM')
    await child.exited
    await rm(dir, { recursive: true, force: true })
  }
  // Started at a file's top level: a `bun test -t` run that skips the file's afterAll must not leave it running.
  const registered = removeAtEnd(stop)
  return { url, port, workDir: join(dir, 'work'), stop }
}
