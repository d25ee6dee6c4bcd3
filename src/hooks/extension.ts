/**
 * What an extension author works with: the types of the filter hook
 * `service/api/content-item` (service.md §6, contract C24–C31),
 * `defineExtension`, `itemTranslation`, `countWords`, and `t` to declare the
 * fields a callback adds. Extensions import it as `#vitrine/extension`,
 * wherever they live (see src/hooks/README.md).
 */
import type { TSchema } from '@sinclair/typebox'
import type { Item } from '../content/schemas'

/**
 * TypeBox's schema builder, to declare the fields a callback adds: `t.Integer()`,
 * `t.String()`, `t.Union([t.String(), t.Null()])`, `t.Array(t.String())`…
 * Not Elysia's `t`: its `t.Integer()` also accepts numeric strings, which would
 * document a response field wrongly.
 * @example addFilter('service/api/content-item', callback, { schema: { add: { reading_time_minutes: t.Integer() } } })
 */
export { Type as t } from '@sinclair/typebox'
export { countWords } from './word-count'

/** The name of the one filter hook. */
export const CONTENT_ITEM_HOOK = 'service/api/content-item'
export type HookName = typeof CONTENT_ITEM_HOOK

/**
 * Argument 1: the item as it stands (service.md §2.2 shape, C12, with
 * `alternates` when the request asks for them: C45). A callback that ran
 * before yours may have added or removed fields, hence `Partial`.
 */
export type ItemData = Partial<Item> & { [field: string]: unknown }

/**
 * The parts of the model a callback may declare it reads (C54), in
 * `addFilter`'s `reads`: each one is a relation of the entry, loaded by the
 * page's statement only when some callback declares it (or some callback
 * declares nothing).
 */
export const MODEL_PARTS = ['translations', 'shownTranslation', 'fieldValues', 'featuredImage', 'terms', 'author'] as const
export type ModelPart = (typeof MODEL_PARTS)[number]

/**
 * Argument 2: the entry's full model, with its relations loaded (C25). Timestamps as in C13.
 * A callback registered with `reads` gets `DeclaredModel` instead: the parts it did not declare are not there.
 */
export interface EntryModel {
  id: number
  /** The entry's content type, for example `{ id: 2, slug: 'post', name: 'Posts' }`. */
  content_type: { id: number; slug: string; name: string }
  status: 'published'
  published_at: string | null
  created_at: string
  updated_at: string
  author_id: number | null
  featured_image_id: number | null
  /**
   * One per language the entry is written in, by language code. The selected
   * language may have none: the item then shows the default language's (C14).
   */
  translations: TranslationModel[]
  /**
   * The one translation the item shows (C14), body included: the language in
   * effect's row, else the default language's, else null. What
   * `itemTranslation(content, context)` finds in `translations`; declare this
   * part alone when that row is all you read (one row loaded per entry, not
   * every language's).
   */
  shownTranslation: TranslationModel | null
  author: { id: number; name: string } | null
  /** In the entry's order (position, then id). */
  terms: TermModel[]
  featuredImage: MediaModel | null
  /** Custom field values; `language_code` null: the value is not translated. */
  fieldValues: FieldValueModel[]
}

export interface TranslationModel {
  language_code: string
  title: string | null
  slug: string | null
  excerpt: string | null
  meta_title: string | null
  meta_description: string | null
  /** HTML, as the editor saved it: escape or sanitise it where you do not trust it. */
  body: string | null
}

export interface TermModel {
  id: number
  name: string
  slug: string
  position: number
  taxonomy: { id: number; slug: string; name: string }
}

export interface MediaModel {
  id: number
  path: string
  /** `path` as an absolute URL (C15). */
  url: string
  alt: string | null
  /** Only the variants generated so far. */
  variants: { name: string; path: string; url: string }[]
}

export interface FieldValueModel {
  id: number
  custom_field_id: number
  key: string
  type: string
  language_code: string | null
  value: unknown
}

/**
 * What a callback registered with `reads` sees of the model (C54): the entry's
 * own columns and `content_type`, and the parts it declared; reading any other
 * part throws.
 * @example type WithFields = DeclaredModel<['fieldValues']> // has fieldValues, no terms
 */
export type DeclaredModel<Reads extends readonly ModelPart[]> = Omit<EntryModel, ModelPart> & Pick<EntryModel, Reads[number]>

/**
 * Request headers, read-only. Every header you read is added to the response's
 * `Vary` (C30), and the service keeps your output for each value it had (C38):
 * `has()` keys it by presence only, `get()` by the value.
 */
export interface RequestHeaders {
  get(name: string): string | null
  has(name: string): boolean
}

/**
 * Argument 3: what a callback may know about the request. The service records
 * what the callbacks read of `request` and keeps their output for those values
 * (C38): read only what your output depends on.
 */
export interface FilterContext {
  request: { readonly method: string; readonly url: string; headers: RequestHeaders }
  /** The language in effect (the requested one, or the default). */
  language: string
  defaultLanguage: string
  route: 'service.api.content.index' | 'service.api.content.show'
  /**
   * The service's public origin (from `PUBLIC_URL`), never the request's Host:
   * build absolute URLs with it.
   * @example `${context.publicUrl}/api/v1/content/${content.content_type.slug}/${data.slug}`
   */
  publicUrl: string
  /**
   * Runs `compute` once per request and shares its result between all items
   * and callbacks that ask for the same key.
   * @example const plans = await context.once('plans', () => fetchPlans())
   */
  once<T>(key: string, compute: () => T | Promise<T>): Promise<T>
}

/**
 * A filter callback: gets the item, returns it changed or not, or `null` to
 * make the whole item null (C26); the callbacks after it are then skipped.
 * `data` is this request's own copy: change it in place or build a new one.
 * `content` is shared and frozen: read it, never change it. Returning nothing is an error.
 * What it returns is kept and served again to requests that agree on what the
 * callbacks read (C38), unless it is registered as `volatile`.
 */
export type ContentItemFilter<Model = EntryModel> = (
  data: ItemData,
  content: Model,
  context: FilterContext,
) => ItemData | null | Promise<ItemData | null>

/**
 * How a callback changes the item's shape. The OpenAPI document shows the
 * default item changed by every installed callback's declaration, and each
 * callback's output is checked against it (src/hooks/README.md).
 */
export interface ItemSchemaChange {
  /** Fields the callback adds to every item it returns (or whose schema it replaces), built with `t`. */
  add?: Record<string, TSchema>
  /** Fields the callback may remove: they stay documented, no longer required. */
  remove?: string[]
}

export interface FilterOptions {
  /** Lower runs first; default 10. */
  priority?: number
  /** What the callback changes in the item's shape; none declared: it keeps the shape as it is. */
  schema?: ItemSchemaChange
  /**
   * The callback's output can differ between two requests that agree on
   * everything it reads of the entry and the request: it reads the clock,
   * draws random numbers, or asks an outside service. The service then runs the
   * chain on every request for the answers this callback runs on, instead of
   * keeping their output (C38). Default false: the output is kept, per value of
   * what the callbacks read through `context.request`.
   * @example addFilter('service/api/content-item', (data) => ({ ...data, is_new: Date.parse(data.published_at ?? '') > Date.now() - 86_400_000 }), { volatile: true, schema: { add: { is_new: t.Boolean() } } })
   */
  volatile?: boolean
  /**
   * The parts of the model the callback reads (C54), any of `MODEL_PARTS`;
   * `[]`: none, only the entry's own columns and `content_type`. When every
   * callback declares, the page's statement loads only what they read, which
   * makes a miss cheaper; reading a part the callback did not declare throws
   * and fails the request (500, the log names the callback and the part).
   * Not given: the callback gets the whole model, and so the statement loads it.
   * @example addFilter('service/api/content-item', (data, content) => ({ ...data, has_image: content.featuredImage !== null }), { reads: ['featuredImage'], schema: { add: { has_image: t.Boolean() } } })
   */
  reads?: readonly ModelPart[]
}

export interface ExtensionApi {
  /**
   * Registers a callback. Lower priorities run first; equal ones in the order
   * they were added (C24). The third argument is the options, or a priority.
   * With `reads`, `content` is typed by it: `reads: ['fieldValues']` gives
   * `content.fieldValues` and no `content.terms` (C54).
   * @example addFilter('service/api/content-item', (data) => ({ ...data, flag: true }), { priority: 20, schema: { add: { flag: t.Boolean() } } })
   */
  addFilter<const Reads extends readonly ModelPart[]>(name: HookName, callback: ContentItemFilter<DeclaredModel<Reads>>, options: FilterOptions & { reads: Reads }): void
  addFilter(name: HookName, callback: ContentItemFilter, options?: number | (FilterOptions & { reads?: undefined })): void
}

/** The default export of an extension file. */
export type Extension = (api: ExtensionApi) => void | Promise<void>

/**
 * Gives an extension its types; returns it unchanged.
 * @example export default defineExtension(({ addFilter }) => addFilter('service/api/content-item', (data) => data))
 */
export function defineExtension(extension: Extension): Extension {
  return extension
}

/**
 * The translation the item shows (C14): the entry's row in the language in
 * effect, else its default-language row, else null. Fields taken from it match
 * the item's title and slug.
 * @example const body = itemTranslation(content, context)?.body ?? null
 */
export function itemTranslation(content: Pick<EntryModel, 'translations'>, context: FilterContext): TranslationModel | null {
  return (
    content.translations.find((row) => row.language_code === context.language) ??
    content.translations.find((row) => row.language_code === context.defaultLanguage) ??
    null
  )
}
