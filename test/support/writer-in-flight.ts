import { connectDatabase } from '../../src/db/connect'
import type { Sql } from '../../src/db/connect'

/**
 * A transaction that writes first and commits last (sql/change-log.md,
 * "Positions and commit order"): `write` runs on a connection of its own and
 * its transaction stays open until `commit()`.
 * @example const slow = await writeInFlight(db.url, (tx) => tx`update …`); …; await slow.commit()
 */
export async function writeInFlight(databaseUrl: string, write: (tx: Sql) => Promise<unknown>): Promise<{ commit(): Promise<void> }> {
  const writer = connectDatabase(databaseUrl, { max: 1 })
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let written!: () => void
  const wrote = new Promise<void>((resolve) => (written = resolve))
  const transaction = writer.begin(async (tx) => {
    await write(tx as unknown as Sql)
    written()
    await held
  })
  // A write that fails rejects here, not later.
  await Promise.race([wrote, transaction])
  return {
    async commit() {
      release()
      try {
        await transaction
      } finally {
        await writer.end()
      }
    },
  }
}
