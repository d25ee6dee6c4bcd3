/**
 * `bun run bench:replication`, part of `bun run bench`: a write that arrives
 * by logical replication is heard by the service as fast as one made on its
 * database directly (C56; docs/logical-replication.md). A publisher (the
 * embedded PostgreSQL's binaries, wal_level=logical, the data model alone:
 * test/support/publisher.ts) feeds `vitrine_bench_replication` on the server;
 * the service's change listener (src/cache/change-listener.ts) listens there.
 * 200 title updates made directly and 200 made on the publisher, alternated:
 * - direct: from the writer's commit to the notification heard;
 * - replicated: from the moment the row is visible on the subscriber (polled
 *   every millisecond: the apply worker's commit, to within a millisecond) to
 *   the notification heard; and, apart, from the publisher's commit.
 * Target (the C56 issue's): replicated p99 ≤ 50 ms after the subscriber applies it.
 * DATABASE_URL: the server (default postgres://postgres@127.0.0.1:5432/postgres).
 * Writes bench/replication-last-run.md.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { listenForChanges } from '../src/cache/change-listener'
import { connectDatabase } from '../src/db/connect'
import { migrate } from '../src/db/migrate'
import { createLogger } from '../src/log'
import { startPublisher } from '../test/support/publisher'

const SERVER = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const NAME = 'vitrine_bench_replication'
const WRITES = 200

const lines: string[] = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

const admin = connectDatabase(SERVER, { max: 1 })
await admin.unsafe(`drop database if exists ${NAME} with (force)`)
await admin.unsafe(`create database ${NAME}`)
const url = Object.assign(new URL(SERVER), { pathname: `/${NAME}` }).toString()
const subscriber = connectDatabase(url, { max: 2 })
const poller = connectDatabase(url, { max: 1 })
await migrate(subscriber)
const publisher = await startPublisher()
try {
  await publisher.cms`
    insert into entries (id, content_type_id, status, published_at)
    select g, (select id from content_types where slug = 'post'), 'published', now() - interval '1 minute' * g
    from generate_series(1, 1000) g
  `
  await publisher.cms`insert into entry_translations (entry_id, language_code, title, slug) select id, 'en', 'Title ' || id, 'entry-' || id from entries`
  await publisher.subscribe(subscriber)
  const heard: { table: string; at: number }[] = []
  let listening!: () => void
  const ready = new Promise<void>((resolve) => (listening = resolve))
  const listener = listenForChanges(url, { onListening: () => listening(), onLost: () => {}, onChange: (change) => heard.push({ table: change.table, at: performance.now() }), onLanguages: () => {} }, { timeoutMs: 5000, log: createLogger('silent') })
  await ready
  /** When the next notification of entry_translations is heard. */
  const nextHeard = async (after: number) => {
    for (;;) {
      const found = heard.find((change) => change.table === 'entry_translations' && change.at >= after)
      if (found) return found.at
      await Bun.sleep(0.2)
    }
  }
  const direct: number[] = []
  const replicated: number[] = []
  const endToEnd: number[] = []
  for (let i = 0; i < WRITES; i++) {
    const id = 1 + (i % 1000)
    heard.length = 0
    const started = performance.now()
    await subscriber`update entry_translations set title = ${`Direct ${i}`} where entry_id = ${id}`
    const committed = performance.now()
    direct.push((await nextHeard(started)) - committed)

    heard.length = 0
    const title = `Replicated ${i}`
    const sent = performance.now()
    await publisher.cms`update entry_translations set title = ${title} where entry_id = ${id}`
    const publisherCommitted = performance.now()
    let visible = 0
    while (!visible) {
      if ((await poller`select 1 from entry_translations where entry_id = ${id} and title = ${title}`).length) visible = performance.now()
      else await Bun.sleep(1)
    }
    const at = await nextHeard(sent)
    replicated.push(Math.max(0, at - visible))
    endToEnd.push(at - publisherCommitted)
  }
  await listener.stop()
  const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!
  say(`# A write heard by the service: direct or by logical replication (${WRITES} each, alternated)`)
  say()
  say('| write | p50 ms | p99 ms | max ms |')
  say('|---|---:|---:|---:|')
  say(`| direct: commit → notification heard | ${percentile(direct, 0.5).toFixed(1)} | ${percentile(direct, 0.99).toFixed(1)} | ${Math.max(...direct).toFixed(1)} |`)
  say(`| replicated: applied on the subscriber → heard | ${percentile(replicated, 0.5).toFixed(1)} | ${percentile(replicated, 0.99).toFixed(1)} | ${Math.max(...replicated).toFixed(1)} |`)
  say(`| replicated: publisher's commit → heard (PostgreSQL's apply included) | ${percentile(endToEnd, 0.5).toFixed(1)} | ${percentile(endToEnd, 0.99).toFixed(1)} | ${Math.max(...endToEnd).toFixed(1)} |`)
  say()
  const p99 = percentile(replicated, 0.99)
  say(`Target: replicated p99 ≤ 50 ms after the subscriber applies it: ${p99 <= 50 ? 'met' : 'missed'} (${p99.toFixed(1)} ms).`)
  await writeFile(join(import.meta.dir, 'replication-last-run.md'), `${lines.join('\n')}\n`)
} finally {
  await publisher.stop(subscriber)
  await poller.end()
  await subscriber.end()
  await admin.unsafe(`drop database if exists ${NAME} with (force)`).catch(() => {})
  await admin.end()
}
