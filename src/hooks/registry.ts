import { CONTENT_ITEM_HOOK, type ContentItemFilter, type HookName } from './extension'

export interface RegisteredFilter {
  callback: ContentItemFilter
  priority: number
  /** Where it was registered (the extension file), for the log. */
  source: string
}

/**
 * The callbacks of the filter hook, kept in the order they run: by priority,
 * then by registration (C24). Built once at start, read by every request.
 */
export class FilterRegistry {
  #filters: RegisteredFilter[] = []

  add(name: HookName, callback: ContentItemFilter, priority = 10, source = 'unknown'): void {
    if (name !== CONTENT_ITEM_HOOK) throw new TypeError(`Unknown hook "${name}": the only hook is "${CONTENT_ITEM_HOOK}".`)
    if (typeof callback !== 'function') throw new TypeError('addFilter needs a function as its callback.')
    if (!Number.isFinite(priority)) throw new TypeError(`The priority must be a number, not ${String(priority)}.`)
    // A stable sort keeps registration order among equal priorities.
    this.#filters = [...this.#filters, { callback, priority, source }].sort((a, b) => a.priority - b.priority)
  }

  get filters(): readonly RegisteredFilter[] {
    return this.#filters
  }

  get isEmpty(): boolean {
    return this.#filters.length === 0
  }
}
