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
 * A chain whose callbacks all return at once costs no promise per item: an
 * item waits only from its first callback that returns a thenable (issue 45).
 * An item whose callback fails at once fails the request there: the items
 * after it are not started (those already waiting run to their end, unheard).
 * @example const data = await applyItemFilters(registry, items, modelsFor(registry.filters, rows, items, mediaBaseUrl), createFilterContext(request, facts), { timeoutMs: 1000, onSchemaMismatch })
 */
export async function applyItemFilters(
  registry: FilterRegistry,
  items: Item[],
  models: readonly (readonly EntryModel[])[],
  request: RequestContext,
  run: FilterRun,
): Promise<(ItemData | null)[]> {
  const filters = registry.filters
  const outputs: (ItemData | null)[] = new Array(items.length)
  const waiting: Promise<unknown>[] = []
  try {
    for (let index = 0; index < items.length; index++) {
      const output = filterOne(filters, items[index]!, items[index]!, models, index, request, run, 0)
      if (!(output instanceof Promise)) {
        outputs[index] = output
        continue
      }
      waiting.push(output.then((settled) => (outputs[index] = settled)))
    }
  } catch (error) {
    // An item failed at once: those still waiting must not leave a rejection nobody hears.
    for (const item of waiting) item.catch(() => {})
    throw error
  }
  if (waiting.length > 0) await Promise.all(waiting)
  return outputs
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

/**
 * One item's chain from the callback at `first` on, `data` being what the one before returned (the
 * request's own `item` at first): its output, or a promise of it from the first callback that returns a
 * thenable (the rest of the chain runs when it settles).
 */
function filterOne(
  filters: readonly RegisteredFilter[],
  item: Item,
  data: ItemData,
  models: readonly (readonly EntryModel[])[],
  itemIndex: number,
  request: RequestContext,
  run: FilterRun,
  first: number,
): ItemData | null | Promise<ItemData | null> {
  for (let filterIndex = first; filterIndex < filters.length; filterIndex++) {
    const filter = filters[filterIndex]!
    if (filter.volatile) request.reads.volatile = true
    const startedAt = performance.now()
    let result: unknown
    let thenable: boolean
    try {
      result = filter.callback(data, models[filterIndex]![itemIndex]!, request.context)
      // Inside: a `then` that throws when read (a Proxy) is the callback's failure too.
      thenable = isThenable(result)
    } catch (error) {
      recordHook(filter.metricName, (performance.now() - startedAt) / 1000)
      throw failure(filter, error)
    }
    if (thenable) {
      return settleWithin(Promise.resolve(result), run.timeoutMs, filter).then(
        (settled) => {
          recordHook(filter.metricName, (performance.now() - startedAt) / 1000)
          const output = checkOutput(filter, settled, run)
          return output === null ? null : filterOne(filters, item, output, models, itemIndex, request, run, filterIndex + 1)
        },
        (error: unknown) => {
          recordHook(filter.metricName, (performance.now() - startedAt) / 1000)
          throw failure(filter, error)
        },
      )
    }
    recordHook(filter.metricName, (performance.now() - startedAt) / 1000)
    const output = checkOutput(filter, result, run)
    if (output === null) return null
    data = output
  }
  return withDefaultKeysFirst(data, item)
}

/** A callback that threw, or whose promise rejected or did not settle in time (C23, C31), as the request's failure. */
function failure(filter: RegisteredFilter, error: unknown): FilterError {
  return error instanceof FilterError ? error : new FilterError(filter, error instanceof UndeclaredReadError ? `broke its declaration: ${error.message}` : `threw: ${describe(error)}`, { cause: error })
}

/** A callback's output, checked: null ends the item's chain (C26); anything but an item object fails the request. */
function checkOutput(filter: RegisteredFilter, result: unknown, { onSchemaMismatch }: FilterRun): ItemData | null {
  if (result === null) return null
  if (result === undefined) throw new FilterError(filter, 'returned undefined: a callback must return the item, or null.')
  if (typeof result !== 'object' || Array.isArray(result)) throw new FilterError(filter, `returned ${Array.isArray(result) ? 'an array' : typeof result}, not the item object.`)
  const mismatch = filter.schemaMismatch(result)
  if (mismatch !== undefined) onSchemaMismatch(filter, mismatch)
  return result as ItemData
}

/**
 * C27: fields a callback adds come after the default fields, whatever the order it built them in.
 * What is served is a copy made as the chain ends, so that nothing a callback keeps (a constant returned
 * for several items, an object cached across requests) can change it before it is rendered; only the
 * request's own item, made for it alone, is served as it is. An output already in that order
 * (`{ ...data, added }`, or the item itself) costs one spread, not a reordering.
 */
function withDefaultKeysFirst(data: ItemData, item: Item): ItemData {
  if (inItemOrder(data)) return data === item ? data : { ...data }
  // No prototype: an added field may be called "constructor" or "__proto__".
  const ordered: ItemData = Object.create(null)
  for (const key of DEFAULT_KEYS) if (Object.hasOwn(data, key)) ordered[key] = data[key]
  for (const key of Object.keys(data)) if (!Object.hasOwn(ordered, key)) ordered[key] = data[key]
  return ordered
}

/** Where each default key stands in the item (C12). */
const DEFAULT_KEY_PLACES = new Map(DEFAULT_KEYS.map((key, place) => [key, place]))

/** Whether an object's default keys come first, in the item's order, and added ones after them. */
function inItemOrder(data: ItemData): boolean {
  let last = -1
  let added = false
  for (const key of Object.keys(data)) {
    const place = DEFAULT_KEY_PLACES.get(key)
    if (place === undefined) added = true
    else if (added || place < last) return false
    else last = place
  }
  return true
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
