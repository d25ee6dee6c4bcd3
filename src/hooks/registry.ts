import type { TObject } from '@sinclair/typebox'
import { Item } from '../content/schemas'
import { checkReads, modelViewer, partsToLoad } from './declared-reads'
import { CONTENT_ITEM_HOOK, type ContentItemFilter, type DeclaredModel, type EntryModel, type ExtensionApi, type FilterOptions, type HookName, type ItemSchemaChange, type ModelPart } from './extension'
import { changeItemSchema, compileMismatchFinder } from './item-schema'

export interface RegisteredFilter {
  callback: ContentItemFilter
  priority: number
  /** Where it was registered (the extension file), for the log. */
  source: string
  /** Its place among the callbacks of `source`, from 1: names an inline arrow function in the log. */
  index: number
  /** The item's shape after this callback, as declared: its output must match it. */
  itemSchema: TObject
  /** What in an output does not match `itemSchema`, or undefined. */
  schemaMismatch(output: unknown): string | undefined
  /** Its output depends on more than the entry and the request: never kept (C38). */
  volatile: boolean
  /** Its file and name (`src/hooks/extensions/20-x.ts:hideDrafts`, `…:#2` for an inline arrow): its label in the metrics (C53). */
  metricName: string
  /** The parts of the model it declared it reads (C54); null: it declared nothing, and gets the whole model. */
  reads: readonly ModelPart[] | null
  /** The model as it may read it (src/hooks/declared-reads.ts); null: the model itself. */
  viewOf: ((model: EntryModel) => EntryModel) | null
}

interface Registration {
  callback: ContentItemFilter
  priority: number
  source: string
  index: number
  change: ItemSchemaChange
  volatile: boolean
  reads: readonly ModelPart[] | null
}

/**
 * The callbacks of the filter hook, kept in the order they run: by priority,
 * then by registration (C24), each with the item shape it declared. Built once
 * at start, read by every request and by the OpenAPI document.
 */
export class FilterRegistry {
  #registrations: Registration[] = []
  #filters: RegisteredFilter[] | undefined
  #modelParts: readonly ModelPart[] | null | undefined

  /**
   * Typed as `addFilter` (src/hooks/extension.ts), `source` besides.
   * @example registry.add('service/api/content-item', callback, { priority: 20, schema: { add: { flag: t.Boolean() } } }, 'src/hooks/extensions/20-flag.ts')
   */
  add<const Reads extends readonly ModelPart[]>(name: HookName, callback: ContentItemFilter<DeclaredModel<Reads>>, options: FilterOptions & { reads: Reads }, source?: string): void
  add(name: HookName, callback: ContentItemFilter, options?: number | (FilterOptions & { reads?: undefined }), source?: string): void
  /** Options of any kind, passed on (the test kit): a callback typed by its `reads` is checked where it is written. */
  add(name: HookName, callback: ContentItemFilter<never>, options?: number | FilterOptions, source?: string): void
  add(name: HookName, callback: ContentItemFilter<never>, options: number | FilterOptions = {}, source = 'unknown'): void {
    if (name !== CONTENT_ITEM_HOOK) throw new TypeError(`Unknown hook "${name}": the only hook is "${CONTENT_ITEM_HOOK}".`)
    if (typeof callback !== 'function') throw new TypeError('addFilter needs a function as its callback.')
    const { priority = 10, schema = {}, volatile = false, reads } = typeof options === 'number' ? { priority: options } : (options ?? {})
    if (!Number.isFinite(priority)) throw new TypeError(`The priority must be a number, not ${String(priority)}.`)
    if (typeof volatile !== 'boolean') throw new TypeError(`volatile must be true or false, not ${String(volatile)}.`)
    checkSchemaChange(schema)
    const declared = checkReads(reads)
    const index = this.#registrations.filter((registration) => registration.source === source).length + 1
    // Typed by its reads, it is handed exactly that view of the model (viewOf).
    const registration = { callback: callback as ContentItemFilter, priority, source, index, change: schema, volatile, reads: declared }
    // A stable sort keeps registration order among equal priorities.
    this.#registrations = [...this.#registrations, registration].sort((a, b) => a.priority - b.priority)
    this.#filters = undefined
    this.#modelParts = undefined
  }

  /**
   * In the order they run. Each one's shape builds on the one before, so the
   * shapes are worked out once every callback is in, on first use; a
   * declaration that cannot apply (removing a field no callback before it has) throws.
   */
  get filters(): readonly RegisteredFilter[] {
    this.#filters ??= this.#resolve()
    return this.#filters
  }

  /** The item's shape after every callback: what the OpenAPI document shows. */
  get itemSchema(): TObject {
    return this.filters.at(-1)?.itemSchema ?? Item
  }

  /**
   * The `{ addFilter }` an extension file's default export is called with:
   * it registers here, under `source`.
   * @example await extension(registry.apiFor('src/hooks/extensions/20-flag.ts'))
   */
  apiFor(source: string): ExtensionApi {
    return { addFilter: (name: HookName, callback: ContentItemFilter<never>, options?: number | FilterOptions) => this.add(name, callback, options, source) }
  }

  get isEmpty(): boolean {
    return this.#registrations.length === 0
  }

  /**
   * What the statements load of each entry's model (C54): null, no model (no
   * callback); else the parts the callbacks declare they read, every part as
   * soon as one callback declares nothing.
   */
  get modelParts(): readonly ModelPart[] | null {
    if (this.#modelParts === undefined) this.#modelParts = this.isEmpty ? null : partsToLoad(this.#registrations.map((registration) => registration.reads))
    return this.#modelParts
  }

  #resolve(): RegisteredFilter[] {
    let shape: TObject = Item
    return this.#registrations.map(({ change, ...registration }) => {
      try {
        shape = changeItemSchema(shape, change)
      } catch (error) {
        throw new TypeError(`The filter callback ${describeCallback(registration)}: ${(error as Error).message}`)
      }
      const metricName = `${registration.source}:${registration.callback.name || `#${registration.index}`}`
      return { ...registration, itemSchema: shape, schemaMismatch: compileMismatchFinder(shape), metricName, viewOf: modelViewer(registration.reads, metricName) }
    })
  }
}

/**
 * How the log names a callback: `"hideDrafts" (#2 of src/hooks/extensions/20-x.ts)`,
 * or `#2 of src/hooks/extensions/20-x.ts` for an inline arrow function, which has no name.
 */
export function describeCallback({ callback, index, source }: Pick<RegisteredFilter, 'callback' | 'index' | 'source'>): string {
  return callback.name ? `"${callback.name}" (#${index} of ${source})` : `#${index} of ${source}`
}

function checkSchemaChange(change: unknown): asserts change is ItemSchemaChange {
  const { add = {}, remove = [] } = (change ?? {}) as Record<string, unknown>
  if (typeof add !== 'object' || add === null || Array.isArray(add)) throw new TypeError('schema.add must be an object of field names and schemas built with t.')
  if (!Array.isArray(remove) || remove.some((key) => typeof key !== 'string')) throw new TypeError('schema.remove must be an array of field names.')
}
