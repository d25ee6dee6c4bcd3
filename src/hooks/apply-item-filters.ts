import type { SchemaMismatchPolicy } from '../config'
import { Item } from '../content/schemas'
import type { Logger } from '../log'
import { recordHook } from '../metrics/families'
import type { RequestContext } from './context'
import { UndeclaredReadError } from './declared-reads'
import type { EntryModel, ItemData } from './extension'
import { describeCallback, type FilterRegistry, type RegisteredFilter } from './registry'

/** A filter callback failed: the request fails closed (C23, C26, C31). The message names the extension. */
export class FilterError extends Error {
  constructor(filter: RegisteredFilter, problem: string, options?: { cause?: unknown }) {
    super(`The filter callback ${describeCallback(filter)} ${problem}`, options)
    this.name = 'FilterError'
  }
}

const DEFAULT_KEYS = Object.keys(Item.properties)

export interface FilterRun {
  timeoutMs: number
  /** Called when a callback's output does not match the shape it declared. */
  onSchemaMismatch: (filter: RegisteredFilter, mismatch: string) => void
}

/**
 * Runs every registered callback over every item, in priority order; each
 * gets the previous one's result (C24) and its own view of the item's model
 * (`models[callback][item]`, C54). Items run side by side; the callbacks
 * of one item never do. A `null` ends that item's chain: the item is null (C26).
 * A volatile callback that runs marks the request's reads volatile (C38).
 * @example const data = await applyItemFilters(registry, items, modelsFor(registry.filters, rows, items, mediaBaseUrl), createFilterContext(request, facts), { timeoutMs: 1000, onSchemaMismatch })
 */
export async function applyItemFilters(
  registry: FilterRegistry,
  items: Item[],
  models: readonly (readonly EntryModel[])[],
  request: RequestContext,
  run: FilterRun,
): Promise<(ItemData | null)[]> {
  return Promise.all(items.map((item, index) => filterOne(registry.filters, item, models, index, request, run)))
}

/**
 * What an output that does not match its callback's declared shape does:
 * `fail` fails the request closed, as a throwing callback does (C23); `log`
 * logs it once per callback and serves the output as it is.
 * @example const onSchemaMismatch = schemaMismatchHandler(config.hookSchemaMismatch, log)
 */
export function schemaMismatchHandler(policy: SchemaMismatchPolicy, log: Logger): FilterRun['onSchemaMismatch'] {
  const reported = new WeakSet<RegisteredFilter>()
  return (filter, mismatch) => {
    const error = new FilterError(filter, `returned an item that does not match its declared schema: ${mismatch}`)
    if (policy === 'fail') throw error
    if (reported.has(filter)) return
    reported.add(filter)
    log.error('extension output does not match its declared schema; served as it is, reported once', { error })
  }
}

async function filterOne(
  filters: readonly RegisteredFilter[],
  item: Item,
  models: readonly (readonly EntryModel[])[],
  itemIndex: number,
  { context, reads }: RequestContext,
  { timeoutMs, onSchemaMismatch }: FilterRun,
): Promise<ItemData | null> {
  let data: ItemData = item
  for (let filterIndex = 0; filterIndex < filters.length; filterIndex++) {
    const filter = filters[filterIndex]
    let result: unknown
    if (filter.volatile) reads.volatile = true
    const startedAt = performance.now()
    try {
      result = filter.callback(data, models[filterIndex][itemIndex], context)
      if (isThenable(result)) result = await settleWithin(Promise.resolve(result), timeoutMs, filter)
    } catch (error) {
      throw error instanceof FilterError ? error : new FilterError(filter, error instanceof UndeclaredReadError ? `broke its declaration: ${error.message}` : `threw: ${describe(error)}`, { cause: error })
    } finally {
      recordHook(filter.metricName, (performance.now() - startedAt) / 1000)
    }
    if (result === null) return null
    if (result === undefined) throw new FilterError(filter, 'returned undefined: a callback must return the item, or null.')
    if (typeof result !== 'object' || Array.isArray(result)) throw new FilterError(filter, `returned ${Array.isArray(result) ? 'an array' : typeof result}, not the item object.`)
    const mismatch = filter.schemaMismatch(result)
    if (mismatch !== undefined) onSchemaMismatch(filter, mismatch)
    data = result as ItemData
  }
  return withDefaultKeysFirst(data)
}

/** C27: fields a callback adds come after the default fields, whatever the order it built them in. */
function withDefaultKeysFirst(data: ItemData): ItemData {
  // No prototype: an added field may be called "constructor" or "__proto__".
  const ordered: ItemData = Object.create(null)
  for (const key of DEFAULT_KEYS) if (Object.hasOwn(data, key)) ordered[key] = data[key]
  for (const key of Object.keys(data)) if (!Object.hasOwn(ordered, key)) ordered[key] = data[key]
  return ordered
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

function settleWithin(promise: Promise<unknown>, timeoutMs: number, filter: RegisteredFilter): Promise<unknown> {
  // A callback that settles after its time is up must not become an unhandled rejection.
  promise.catch(() => {})
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FilterError(filter, `did not settle within ${timeoutMs} ms (HOOK_TIMEOUT_MS).`)), timeoutMs)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
