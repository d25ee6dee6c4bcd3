import { FormatRegistry, KindGuard, Type, type TObject, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import type { ItemSchemaChange } from './extension'

// TypeBox checks a `format` only when one is registered. Elysia registers a lenient `date-time` of its
// own (it takes `2026-01-01 09:30:00`) when it is loaded first: which one checked callback outputs
// depended on the order modules loaded in. Ours, RFC 3339 as C13 writes timestamps, is registered
// whatever that order (no route of ours reads a date-time from a request).
const RFC_3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i
FormatRegistry.Set('date-time', rememberingValid((value) => RFC_3339.test(value) && !Number.isNaN(Date.parse(value))))

/** How many valid values a format check remembers before it starts over. */
const REMEMBERED_VALUES = 10_000

/**
 * A format check that remembers the values it found valid: every callback's output is checked
 * against its declared shape (C31), and an item's two timestamps cost a regular expression and a
 * date parse each, about a quarter of the chain of a callback that reads nothing (issue 45). The same
 * check, so the same answers; bounded, so a flood of distinct values costs no more memory.
 */
function rememberingValid(check: (value: string) => boolean): (value: string) => boolean {
  const valid = new Set<string>()
  return (value) => {
    if (valid.has(value)) return true
    if (!check(value)) return false
    if (valid.size >= REMEMBERED_VALUES) valid.clear()
    valid.add(value)
    return true
  }
}

/**
 * The item's shape after a callback: `before` with the declared fields added
 * (required, with their schema, unless wrapped in `t.Optional`) and the
 * declared removals no longer required.
 * The document's example gains a plain value of each added field. Throws a
 * TypeError for a declaration that cannot be right.
 * @example changeItemSchema(Item, { add: { reading_time_minutes: t.Integer() }, remove: ['excerpt'] })
 */
export function changeItemSchema(before: TObject, change: ItemSchemaChange): TObject {
  const properties: Record<string, TSchema> = { ...before.properties }
  for (const key of change.remove ?? []) {
    if (!(key in properties)) throw new TypeError(`schema.remove names "${key}", which the item does not have when this callback runs (it has ${Object.keys(properties).join(', ')}).`)
    properties[key] = Type.Optional(properties[key])
  }
  const example = { ...(before.examples as Record<string, unknown>[] | undefined)?.[0] }
  for (const [key, schema] of Object.entries(change.add ?? {})) {
    if (!KindGuard.IsSchema(schema)) throw new TypeError(`schema.add.${key} is not a schema: build it with t from src/hooks/extension.ts, for example t.Integer().`)
    properties[key] = schema
    example[key] = Value.Create(schema)
  }
  return Type.Object(properties, { additionalProperties: false, description: before.description, examples: [example] })
}

/**
 * Compiles `schema` once; the function it returns says what in a value does
 * not match, or returns undefined when all of it does.
 * @example compileMismatchFinder(Item)({ id: 'x' }) // '/id: Expected integer'
 */
export function compileMismatchFinder(schema: TObject): (value: unknown) => string | undefined {
  const check: TypeCheck<TObject> = TypeCompiler.Compile(schema)
  const mismatch = (value: unknown) => {
    const first = check.Errors(value).First()
    return first ? `${first.path || '/'}: ${first.message}` : 'it does not match'
  }
  const known = Object.getOwnPropertyNames(schema.properties)
  // Closed, with optional keys (the item's are) and no bounds on the number of keys: TypeBox checks each
  // own key against an array of the keys. The same check with a Set costs half of a whole output's
  // check, done for every callback and item (issue 45). Closed with every key required, TypeBox
  // counts the own keys instead, which differs for an inherited one: that check is TypeBox's own.
  const keysInArray = schema.additionalProperties === false && (schema.required?.length ?? 0) !== known.length && schema.minProperties === undefined && schema.maxProperties === undefined
  if (!keysInArray) return (value) => (check.Check(value) ? undefined : mismatch(value))
  // What does not match is still told by TypeBox's errors of the closed schema.
  const open = TypeCompiler.Compile(Type.Object(schema.properties))
  const keys = new Set(known)
  return (value) => {
    if (!open.Check(value)) return mismatch(value)
    for (const key of Object.getOwnPropertyNames(value)) if (!keys.has(key)) return mismatch(value)
    return undefined
  }
}
