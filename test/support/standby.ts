import { existsSync } from 'node:fs'
import { appendFile, chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { connectDatabase, type Sql } from '../../src/db/connect'
import { freePort, reachablePostgresBinaries } from '../../src/db/embedded'
import { processRuns, removeAtEnd } from './leftovers'
import { waitFor } from './wait'

/**
 * A streaming standby of the test cluster (C50 tests, bench/replicas.ts), made
 * with PostgreSQL's own tools and started on a port of its own: a real
 * replica, never a mock.
 * - A server whose major version has its binaries under /usr/lib/postgresql:
 *   `pg_basebackup -R` with a replication slot, started with its `pg_ctl`.
 * - The embedded PostgreSQL ships no pg_basebackup (and an older one refuses a
 *   newer server): the documented low-level base backup (`pg_backup_start`, a
 *   copy of the data folder, `pg_backup_stop`'s backup_label), the same slot
 *   and standby settings as `-R` writes, started with the embedded `pg_ctl`.
 * Both run as the `postgres` user when we are root, as PostgreSQL asks.
 */
export interface Standby {
  port: number
  /** The URL of a database on the standby, with the primary's user and password. */
  url(database: string): string
  /** A superuser connection to the standby (pause and resume replay). */
  admin: Sql
  /** `pg_wal_replay_pause()` / `pg_wal_replay_resume()` on the standby. */
  pauseReplay(): Promise<void>
  resumeReplay(): Promise<void>
  /** Waits until the standby has replayed everything the primary has written so far. */
  catchUp(): Promise<void>
  /** Stops it at once (`pg_ctl stop -m immediate`): a replica killed. */
  kill(): Promise<void>
  /** Starts it again after `kill`. */
  restart(): Promise<void>
  /** Stops it, drops its slot on the primary and removes its folder. */
  remove(): Promise<void>
}

const SLOT_PREFIX = 'vitrine_test_standby_'

/**
 * @example const standby = await startStandby(adminUrl); …; await standby.remove()
 */
export async function startStandby(primaryAdminUrl: string): Promise<Standby> {
  const primary = connectDatabase(primaryAdminUrl, { max: 2 })
  const folder = await mkdtemp(join(tmpdir(), 'vitrine-standby-'))
  await chmod(folder, 0o755)
  const dataDir = join(folder, 'data')
  const port = await freePort()
  const slot = `${SLOT_PREFIX}${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const url = new URL(primaryAdminUrl)
  // The embedded package's binaries, where the postgres user can run them (a clone under a folder it may not
  // enter, or a copy of the repository linking node_modules from one, gets them copied aside: src/db/embedded.ts).
  let bin = join(await reachablePostgresBinaries(), 'bin')
  try {
    if (userInfo().uid === 0) await run(['chown', 'postgres:postgres', folder])
    await dropAbandonedSlots(primary)
    const [{ major }] = await primary<{ major: number }[]>`select current_setting('server_version_num')::int / 10000 as major`
    const serverBin = `/usr/lib/postgresql/${major}/bin`
    if (existsSync(join(serverBin, 'pg_basebackup'))) {
      await allowReplication(primary)
      await run(['pg_basebackup', '-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username) || 'postgres', '-D', dataDir, '-R', '-X', 'stream', '-c', 'fast', '-C', '-S', slot, '--no-sync', '--no-manifest'].map((part, index) => (index === 0 ? join(serverBin, part) : part)), passwordEnv(url))
      bin = serverBin
    } else {
      await lowLevelBaseBackup(primary, dataDir, slot, url)
    }
    // A Debian server keeps its configuration outside the data folder: the standby gets its own.
    if (!existsSync(join(dataDir, 'postgresql.conf'))) await writeFile(join(dataDir, 'postgresql.conf'), "hot_standby = on\n")
    if (!existsSync(join(dataDir, 'pg_hba.conf'))) await writeFile(join(dataDir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\n')
    await appendFile(join(dataDir, 'postgresql.auto.conf'), `hot_standby = on\nhot_standby_feedback = on\n`)
    if (userInfo().uid === 0) await run(['chown', '-R', 'postgres:postgres', folder])
    await chmod(dataDir, 0o700)
  } catch (error) {
    await primary`select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = ${slot}`.catch(() => {})
    await primary.end()
    await rm(folder, { recursive: true, force: true })
    throw error
  }

  const pgCtl = (...args: string[]) => run([join(bin, 'pg_ctl'), '-D', dataDir, ...args], {}, true)
  const start = () => pgCtl('-l', join(folder, 'log'), '-w', '-t', '60', '-o', `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`, 'start')
  await start()
  const standbyUrl = (database: string) => {
    const copy = new URL(primaryAdminUrl)
    copy.port = String(port)
    copy.pathname = `/${database}`
    return copy.toString()
  }
  const admin = connectDatabase(standbyUrl(url.pathname.slice(1) || 'postgres'), { max: 1 })
  const catchUp = async () => {
    // The insert position, as the service asks it (src/db/notified-positions.ts). The walwriter flushes whole pages
    // and asynchronous commits only: WAL after the last commit (a standby snapshot, say) waited for the next one,
    // up to 15 s on an idle primary. A synchronous commit after the read flushes everything before it.
    const position = await primary.begin(async (tx) => {
      await tx`set local synchronous_commit = on`
      await tx`select pg_current_xact_id()`
      const [{ position }] = await tx<{ position: string }[]>`select pg_current_wal_insert_lsn()::text as position`
      return position
    })
    await waitFor('the standby replays what the primary wrote', async () => {
      const [row] = await admin<{ behind: boolean }[]>`select coalesce(pg_last_wal_replay_lsn() < ${position}::pg_lsn, true) as behind`.catch(() => [{ behind: true }])
      return !row.behind
    }, 60_000)
  }
  await catchUp()
  const standby: Standby = {
    port,
    url: standbyUrl,
    admin,
    pauseReplay: async () => void (await admin`select pg_wal_replay_pause()`),
    resumeReplay: async () => void (await admin`select pg_wal_replay_resume()`),
    catchUp,
    kill: () => pgCtl('-m', 'immediate', '-w', 'stop'),
    restart: start,
    async remove() {
      registered.done()
      await admin.end({ timeout: 1 })
      await pgCtl('-m', 'immediate', '-w', 'stop').catch(() => {})
      await waitFor('the standby lets go of its slot', async () => (await primary`select 1 from pg_replication_slots where slot_name = ${slot} and active`).length === 0).catch(() => {})
      await primary`select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = ${slot}`.catch(() => {})
      await primary.end()
      await rm(folder, { recursive: true, force: true })
    },
  }
  const registered = removeAtEnd(() => standby.remove())
  return standby
}

/**
 * The low-level base backup of PostgreSQL's documentation, for a primary on
 * this machine: a slot that keeps the WAL from before the backup, the data
 * folder copied between pg_backup_start and pg_backup_stop, the backup label
 * written into the copy, and what `pg_basebackup -R` would add.
 */
async function lowLevelBaseBackup(primary: Sql, dataDir: string, slot: string, url: URL): Promise<void> {
  await primary`select pg_create_physical_replication_slot(${slot}, true)`
  const [{ source }] = await primary<{ source: string }[]>`select current_setting('data_directory') as source`
  const session = await primary.reserve()
  try {
    await session`select pg_backup_start('vitrine-test-standby', true)`
    // Files come and go while the server runs: that is what the WAL replayed from the label is for.
    await run(['rsync', '-a', '--exclude=postmaster.pid', '--exclude=postmaster.opts', '--exclude=pg_wal/*', '--exclude=pg_replslot/*', '--exclude=pg_stat_tmp/*', `${source}/`, `${dataDir}/`], {}, false, [0, 24])
    const [{ labelfile, spcmapfile }] = await session<{ labelfile: string; spcmapfile: string | null }[]>`select labelfile, spcmapfile from pg_backup_stop(false)`
    await writeFile(join(dataDir, 'backup_label'), labelfile)
    if (spcmapfile) await writeFile(join(dataDir, 'tablespace_map'), spcmapfile)
  } finally {
    session.release()
  }
  const conninfo = `host=${url.hostname} port=${url.port || '5432'} user=${decodeURIComponent(url.username) || 'postgres'}${url.password ? ` password=${decodeURIComponent(url.password)}` : ''}`
  await appendFile(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\nprimary_slot_name = '${slot}'\n`)
  await writeFile(join(dataDir, 'standby.signal'), '')
}

/**
 * The test server may refuse replication connections (no `replication` line
 * in pg_hba.conf): one for 127.0.0.1 is added, with the same trust as its
 * other lines, and the configuration reloaded (no restart).
 */
async function allowReplication(primary: Sql): Promise<void> {
  const [{ hba }] = await primary<{ hba: string }[]>`select current_setting('hba_file') as hba`
  const rules = await primary<{ database: string[] }[]>`select database from pg_hba_file_rules where error is null`
  if (rules.some((rule) => rule.database.includes('replication'))) return
  await appendFile(hba, '# Added by Vitrine\'s replica tests (test/support/standby.ts): a standby on this machine streams from here.\nhost replication all 127.0.0.1/32 trust\n')
  await primary`select pg_reload_conf()`
}

/** Slots of test runs whose process is gone (a run killed midway): they would keep WAL on the server for good. */
async function dropAbandonedSlots(primary: Sql): Promise<void> {
  const slots = await primary<{ slot_name: string }[]>`
    select slot_name from pg_replication_slots where slot_name like ${`${SLOT_PREFIX}%`} and not active
  `
  for (const { slot_name } of slots) {
    const pid = Number(slot_name.slice(SLOT_PREFIX.length).split('_')[0])
    if (pid !== process.pid && !processRuns(pid)) await primary`select pg_drop_replication_slot(${slot_name})`.catch(() => {})
  }
}

function passwordEnv(url: URL): Record<string, string> {
  return url.password ? { PGPASSWORD: decodeURIComponent(url.password) } : {}
}

/** Runs a command (as `postgres` when `asPostgres` and we are root); fails with its output. */
async function run(command: string[], env: Record<string, string> = {}, asPostgres = command[0].includes('pg_'), okCodes = [0]): Promise<void> {
  const full = asPostgres && userInfo().uid === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command
  const child = Bun.spawn(full, { env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe', cwd: tmpdir() })
  const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  if (!okCodes.includes(code)) throw new Error(`${command.join(' ')} exited with ${code}: ${err || out}`)
}
