import { loadConfig } from '../config'
import { DRIFT_SLICE_ENTRIES, sliceStart } from '../content/kept-drift-check'
import { connectDatabase, type Sql } from '../db/connect'
import { resolveDatabase } from '../db/open'
import { createLogger } from '../log'
import { runCommand } from './run'

/**
 * `bun run repair` (C56): makes every structure the service keeps beside the
 * data model exact again, as the database owner, without holding readers off
 * and holding writers off briefly: the triggers' state, then the rows kept per
 * entry one slice of entries a transaction (guards, search documents and
 * postings: a writer of an entry waits for its slice at most), then the live,
 * filter and term counts and the term lists (writers of entries and terms wait
 * while they are counted: seconds at a million entries); postings of no
 * document are swept (every posting read: minutes at a million entries). Every Vitrine then
 * drops its cached answers. `bun run repair --check` only says what drifted,
 * every entry included, and exits 1 if anything did.
 */
runCommand(async (onFailure) => {
  const config = loadConfig(process.env)
  const log = createLogger(config.logLevel)
  const target = await resolveDatabase(config, log, onFailure, { joinRunning: true })
  const sql = connectDatabase(target.url, { max: 1, timeoutMs: config.databaseTimeoutMs })
  try {
    if (process.argv.includes('--check')) {
      const drifted = await driftOf(sql)
      report(drifted)
      if (drifted.some((row) => row.drifted > 0)) process.exitCode = 1
      return
    }
    await sql`select vitrine_repair_triggers()`
    const [{ low, high }] = await sql<{ low: number | null; high: number | null }[]>`
      select least((select min(id) from entries), (select min(entry_id) from entry_guards), (select min(entry_id) from search_documents))::float8 as low,
        greatest((select max(id) from entries), (select max(entry_id) from entry_guards), (select max(entry_id) from search_documents))::float8 as high
    `
    let drifted = 0
    let slices = 0
    for (let first = sliceStart(low ?? 0); high !== null && first <= high; first += DRIFT_SLICE_ENTRIES) {
      const [{ entries }] = await sql<{ entries: number }[]>`select vitrine_repair_entries(${first}::int8, ${first + DRIFT_SLICE_ENTRIES - 1}::int8) as entries`
      drifted += entries
      slices++
    }
    const [{ orphans }] = await sql<{ orphans: number }[]>`select vitrine_repair_orphan_postings() as orphans`
    const [{ prefixes }] = await sql<{ prefixes: number }[]>`select vitrine_repair_search_prefixes()::int as prefixes`
    await sql`select vitrine_repair_live_entry_counts()`
    console.log(`Repaired: ${drifted} entries whose kept rows disagreed, in ${slices} slices of ${DRIFT_SLICE_ENTRIES} entries; ${orphans} postings of no document; ${prefixes} prefix rows removed or made again from their postings; the counts and term lists rebuilt; the triggers as they should be.`)
    report(await driftOf(sql))
  } finally {
    await sql.end()
    await target.embedded?.stop()
  }
}, { stopOnSignals: ['SIGTERM', 'SIGINT'], during: '' })

/** Every structure's drift, every entry included (it recomputes every search vector: minutes at a million entries). */
async function driftOf(sql: Sql): Promise<{ structure: string; drifted: number }[]> {
  return sql.begin(async (tx) => {
    await tx`set local statement_timeout = 0`
    return tx<{ structure: string; drifted: number }[]>`select structure, drifted::int from vitrine_kept_drift()`
  })
}

function report(drifted: { structure: string; drifted: number }[]): void {
  for (const { structure, drifted: rows } of drifted) console.log(`${structure}: ${rows === 0 ? 'exact' : `${rows} rows drifted`}`)
}
