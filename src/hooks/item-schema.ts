import { FormatRegistry, KindGuard, Type, type TObject, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import type { ItemSchemaChange } from './extension'

// TypeBox checks a `format` only when one is registered (Elysia registers its own when loaded first).
const RFC_3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => RFC_3339.test(value) && !Number.isNaN(Date.parse(value)))

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
  return (value) => {
    if (check.Check(value)) return undefined
    const first = check.Errors(value).First()
    return first ? `${first.path || '/'}: ${first.message}` : 'it does not match'
  }
}
