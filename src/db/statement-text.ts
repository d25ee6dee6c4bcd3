import type { PendingQuery, Row } from 'postgres'
import type { Sql } from './connect'

/**
 * A statement the service composes from fragments (src/content/statement-fragments.ts),
 * flattened once per shape into one template (its strings, and the values
 * between them) and then made with each request's values. postgres.js builds
 * the text of a tagged statement on every execution, walking every nested
 * fragment: for the single-entry statement that was about a tenth of the
 * process's CPU per uncached request (issue 45). The flattened statement is still a
 * tagged one: it nests in another (a replica's read wraps it, C50), and its
 * text is the one postgres.js builds from the fragments (test/statement-text.test.ts
 * checks it against the driver's own), so the server sees one prepared
 * statement either way.
 * @example const entry = new StatementTexts<{ type: string; slug: string }>(['type', 'slug']); const query = entry.run(sql, 'lean', (value) => sql`select ${value.slug}`, { type: 'post', slug: 'hello' })
 */
export class StatementTexts<Values extends Record<string, unknown>> {
  readonly #texts = new Map<string, Flattened>()

  /** `names`: every value's name; each must appear in every text. */
  constructor(private readonly names: readonly (keyof Values & string)[]) {}

  /**
   * The statement `compose` makes for `values`, made from its flattened
   * template: `compose` is called once per `shape` (a key naming everything
   * but the values that changes its text), with a stand-in for each value,
   * which it may only interpolate as it is.
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
    return sql(flattened.strings, ...(parameters as never[])) as unknown as PendingQuery<T>
  }
}

/** A value a composed statement will be given, while it is flattened. */
class StandIn {
  constructor(readonly name: string) {}
}

interface Flattened {
  /** The text around the values, as a template literal's strings: one more than the values. */
  strings: TemplateStringsArray
  /** In order: a stand-in, or a value the fragments hold themselves. */
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
 * A composed statement as one template: each fragment's text in place, any
 * other value a slot between two strings, as postgres.js numbers them.
 * Helpers (`sql(identifier)`, `sql(rows)`, lists of fragments) are not
 * flattened: a statement using one throws here.
 * @example flatten(sql`select ${1} from ${sql`entries where id = ${2}`}`) // { strings: ['select ', ' from entries where id = ', ''], parameters: [1, 2] }
 */
export function flatten(query: object): Flattened {
  const strings: string[] = []
  const parameters: unknown[] = []
  let text = ''
  const walk = (composed: Composed): void => {
    text += composed.strings[0]!
    for (let index = 1; index < composed.strings.length; index++) {
      const value = composed.args[index - 1]
      if (isComposed(value)) walk(value)
      else if (typeof value === 'object' && value !== null && !(value instanceof StandIn)) throw new Error('A statement with helpers or lists of fragments is not flattened.')
      else {
        strings.push(text)
        parameters.push(value)
        text = ''
      }
      text += composed.strings[index]
    }
  }
  if (!isComposed(query)) throw new Error('Not a statement composed with the sql tag.')
  walk(query)
  strings.push(text)
  return { strings: Object.assign(strings, { raw: [...strings] }) as unknown as TemplateStringsArray, parameters }
}
