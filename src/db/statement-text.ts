import type { PendingQuery, Row } from 'postgres'
import type { Sql } from './connect'

/**
 * A statement the service composes from fragments (src/content/statement-fragments.ts),
 * flattened to its text once per shape and then sent with each request's values.
 * postgres.js builds the text of a tagged statement on every execution, walking
 * every nested fragment: for the single-entry statement that was a sixth of the
 * process's time per uncached request (issue 45). The text is the same as the
 * one postgres.js builds (test/statement-text.test.ts checks it against the
 * driver's own), so the server sees one prepared statement either way.
 * @example const entry = new StatementTexts<{ type: string; slug: string }>(['type', 'slug']); const query = entry.run(sql, 'lean', (value) => sql`select ${value.slug}`, { type: 'post', slug: 'hello' })
 */
export class StatementTexts<Values extends Record<string, unknown>> {
  readonly #texts = new Map<string, Flattened>()

  /** `names`: every value's name; each must appear in every text. */
  constructor(private readonly names: readonly (keyof Values & string)[]) {}

  /**
   * The statement `compose` makes for `values`, sent as text: `compose` is
   * called once per `shape` (a key naming everything but the values that
   * changes its text), with a stand-in for each value, which it may only
   * interpolate as it is.
   */
  run<T extends readonly Row[]>(sql: Sql, shape: string, compose: (value: { [Name in keyof Values]: Values[Name] }) => PendingQuery<T>, values: Values): PendingQuery<T> {
    let flattened = this.#texts.get(shape)
    if (flattened === undefined) {
      const standIns = Object.fromEntries(this.names.map((name) => [name, new StandIn(name)])) as { [Name in keyof Values]: Values[Name] }
      flattened = flatten(compose(standIns))
      // A value the text does not hold would be sent as whatever `compose` found in its place.
      const missing = this.names.filter((name) => !flattened!.parameters.some((parameter) => parameter instanceof StandIn && parameter.name === name))
      if (missing.length) throw new Error(`The statement's text does not hold ${missing.join(', ')}.`)
      this.#texts.set(shape, flattened)
    }
    // An absent value is SQL's null, as the fragments write `${value ?? null}`.
    const parameters = flattened.parameters.map((parameter) => (parameter instanceof StandIn ? (values[parameter.name] ?? null) : parameter))
    return sql.unsafe(flattened.text, parameters as never[], { prepare: true }) as unknown as PendingQuery<T>
  }
}

/** A value a composed statement will be given, while it is flattened. */
class StandIn {
  constructor(readonly name: string) {}
}

interface Flattened {
  text: string
  /** In order of `$1…$n`: a stand-in, or a value the fragments hold themselves. */
  parameters: unknown[]
}

/** What postgres.js keeps of a tagged statement or fragment: its strings, and what goes between them. */
interface Composed {
  strings: readonly string[]
  args: readonly unknown[]
}

function isComposed(value: unknown): value is Composed {
  return typeof value === 'object' && value !== null && Array.isArray((value as Composed).strings) && Array.isArray((value as Composed).args)
}

/**
 * The text of a composed statement as postgres.js writes it: a fragment in
 * place, any other value a numbered parameter. Helpers (`sql(identifier)`,
 * `sql(rows)`, lists of fragments) are not flattened: a statement using one
 * throws here, and is sent as it is composed.
 * @example flatten(sql`select ${1} from ${sql`entries where id = ${2}`}`) // { text: 'select $1 from entries where id = $2', parameters: [1, 2] }
 */
export function flatten(query: object): Flattened {
  const parameters: unknown[] = []
  const walk = (composed: Composed): string => {
    let text = composed.strings[0]!
    for (let index = 1; index < composed.strings.length; index++) {
      const value = composed.args[index - 1]
      if (isComposed(value)) text += walk(value)
      else if (typeof value === 'object' && value !== null && !(value instanceof StandIn)) throw new Error('A statement with helpers or lists of fragments is not flattened.')
      else text += `$${parameters.push(value)}`
      text += composed.strings[index]
    }
    return text
  }
  if (!isComposed(query)) throw new Error('Not a statement composed with the sql tag.')
  return { text: walk(query), parameters }
}
