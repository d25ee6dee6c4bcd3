import { randomBytes } from 'node:crypto'
import { loadConfig } from '../config'
import { connectDatabase } from '../db/connect'
import { resolveDatabase } from '../db/open'
import { createLogger } from '../log'
import { newMessageId } from '../webhooks/messages'
import { sendMessage } from '../webhooks/send'
import { runCommand } from './run'

const USAGE = `Usage:
  bun run webhooks add URL [--types post,page] [--debounce 10s] [--secret]
  bun run webhooks list
  bun run webhooks remove ID
  bun run webhooks test ID`

/** A mistake on the command line: its message and the usage, exit status 2. */
class UsageError extends Error {}

/**
 * `bun run webhooks` (C57): the rows of `webhooks`, for those without an admin
 * panel. `add` writes one (`--secret` makes a `whsec_` secret and prints it
 * once; `--debounce` takes ms, s or m), `list` shows them with what each has
 * pending, `remove` deletes one (its pending messages with it), `test` sends
 * one `webhook.test` message now, signed as the others, and says what the
 * endpoint answered (exit 1 unless 2xx). The service hears the table: no restart.
 */
runCommand(async (onFailure) => {
  const config = loadConfig(process.env)
  const [command, ...args] = process.argv.slice(2)
  try {
    parseCommand(command, args)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    console.error(`${error.message}\n\n${USAGE}`)
    process.exit(2)
  }
  const log = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel)
  const target = await resolveDatabase(config, log, onFailure, { joinRunning: true })
  const sql = connectDatabase(target.url, { max: 1, timeoutMs: config.databaseTimeoutMs })
  try {
    const parsed = parseCommand(command, args)
    if (parsed.command === 'add') {
      const secret = parsed.secret ? `whsec_${randomBytes(32).toString('base64')}` : null
      const [row] = await sql<{ id: string }[]>`
        insert into webhooks (url, secret, types, debounce_ms)
        values (${parsed.url}, ${secret}, string_to_array(${parsed.types?.join(',') ?? null}::text, ','), ${parsed.debounceMs})
        returning id::text
      `
      console.log(`Added webhook ${row!.id}: ${parsed.url}`)
      if (secret) console.log(`Its secret (shown once; give it to the receiver): ${secret}`)
    } else if (parsed.command === 'list') {
      const rows = await sql<{ id: string; url: string; signed: boolean; types: string[] | null; debounce_ms: number; state: string; pending: number }[]>`
        select w.id::text, w.url, w.secret is not null as signed, to_json(w.types) as types, w.debounce_ms,
          case when not w.enabled then 'disabled' when p.gone_version = w.xmin::text then 'gone (410): update its row to resume' else 'enabled' end as state,
          (select count(*)::int from webhook_deliveries d where d.webhook_id = w.id) as pending
        from webhooks w
        left join webhook_positions p on p.webhook_id = w.id
        order by w.id
      `
      if (rows.length === 0) console.log('No webhooks. Add one: bun run webhooks add URL')
      for (const row of rows) {
        const what = [row.types ? `types ${row.types.join(',')}` : 'every type', row.debounce_ms > 0 ? `debounce ${row.debounce_ms} ms` : 'a message per change', row.signed ? 'signed' : 'unsigned']
        console.log(`${row.id}\t${row.url}\t${row.state}\t${what.join(', ')}\t${row.pending} pending`)
      }
    } else if (parsed.command === 'remove') {
      const removed = await sql`delete from webhooks where id = ${parsed.id}::int8`
      if (removed.count === 0) throw new UsageError(`There is no webhook ${parsed.id}.`)
      console.log(`Removed webhook ${parsed.id}.`)
    } else {
      const [row] = await sql<{ url: string; secret: string | null }[]>`select url, secret from webhooks where id = ${parsed.id}::int8`
      if (!row) throw new UsageError(`There is no webhook ${parsed.id}.`)
      const body = JSON.stringify({ type: 'webhook.test', timestamp: new Date().toISOString(), data: { webhook: Number(parsed.id) } })
      const attempt = await sendMessage({ url: row.url, secret: row.secret, id: newMessageId(), body }, { allowPrivate: config.webhookAllowPrivate })
      const ok = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300
      console.log(ok ? `Webhook ${parsed.id} answered ${attempt.status}.` : `Webhook ${parsed.id} failed: ${attempt.status !== undefined ? `it answered ${attempt.status}` : attempt.error}.`)
      if (!ok) process.exitCode = 1
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    console.error(error.message)
    process.exitCode = 2
  } finally {
    await sql.end()
    await target.embedded?.stop()
  }
}, { stopOnSignals: ['SIGTERM', 'SIGINT'], during: '' })

type Parsed =
  | { command: 'add'; url: string; types: string[] | null; debounceMs: number; secret: boolean }
  | { command: 'list' }
  | { command: 'remove' | 'test'; id: string }

function parseCommand(command: string | undefined, args: string[]): Parsed {
  if (command === 'list' && args.length === 0) return { command }
  if ((command === 'remove' || command === 'test') && args.length === 1) {
    if (!/^\d{1,18}$/.test(args[0]!)) throw new UsageError(`A webhook's id is a number: ${args[0]}.`)
    return { command, id: args[0]! }
  }
  if (command !== 'add') throw new UsageError(command ? `Not a webhooks command: ${[command, ...args].join(' ')}.` : 'Which command?')
  let url: string | undefined
  let types: string[] | null = null
  let debounceMs = 0
  let secret = false
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!
    if (arg === '--secret') secret = true
    else if (arg === '--types') {
      types = (args[++index] ?? '').split(',').map((type) => type.trim()).filter(Boolean)
      if (types.length === 0) throw new UsageError('--types takes content type slugs: --types post,page.')
    } else if (arg === '--debounce') debounceMs = parseDuration(args[++index] ?? '')
    else if (url === undefined && !arg.startsWith('--')) url = arg
    else throw new UsageError(`Not an option of add: ${arg}.`)
  }
  if (url === undefined) throw new UsageError('add takes the URL to tell.')
  let parsedUrl: URL
  try {
    parsedUrl = new URL(url)
  } catch {
    throw new UsageError(`Not a URL: ${url}.`)
  }
  if (parsedUrl.protocol !== 'http:' && parsedUrl.protocol !== 'https:') throw new UsageError(`A webhook's URL is http(s): ${parsedUrl.protocol}.`)
  return { command, url, types, debounceMs, secret }
}

/**
 * `10s`, `500ms`, `2m` (a bare number: milliseconds) in milliseconds.
 * @example parseDuration('10s') // 10000
 */
function parseDuration(text: string): number {
  const match = /^(\d{1,9})(ms|s|m)?$/.exec(text.trim())
  if (!match) throw new UsageError(`--debounce takes a duration: 500ms, 10s, 2m (not ${text || 'nothing'}).`)
  const ms = Number(match[1]) * (match[2] === 'm' ? 60_000 : match[2] === 's' ? 1000 : 1)
  if (ms > 2 ** 31 - 1) throw new UsageError('--debounce is at most 24 days.')
  return ms
}
