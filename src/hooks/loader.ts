import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { relative, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ExtensionApi } from './extension'
import { provideExtensionModule } from './extension-alias'
import { FilterRegistry } from './registry'

/** An extension file could not be loaded; the message names it. The start stops. */
export class ExtensionLoadError extends Error {}

/**
 * Loads every `*.ts` file directly in `dir` (relative to the working
 * directory), in file-name order, and calls its
 * default export with `{ addFilter }`.
 * @example const registry = await loadExtensions('src/hooks/extensions')
 */
export async function loadExtensions(dir: string): Promise<{ registry: FilterRegistry; files: string[] }> {
  const registry = new FilterRegistry()
  if (!existsSync(dir)) return { registry, files: [] }
  const files = (await readdir(dir, { withFileTypes: true }))
    .filter((file) => file.isFile() && file.name.endsWith('.ts') && !file.name.endsWith('.d.ts'))
    .map((file) => file.name)
    .sort()
  provideExtensionModule()
  for (const file of files) {
    const path = resolve(dir, file)
    // Named from the working directory when it lies below it, else by its full path.
    const source = path.startsWith(process.cwd() + sep) ? relative(process.cwd(), path) : path
    try {
      const module = await import(pathToFileURL(path).href)
      if (typeof module.default !== 'function') throw new Error('its default export is not a function; see src/hooks/README.md.')
      const api: ExtensionApi = { addFilter: (name, callback, options) => registry.add(name, callback, options, source) }
      await module.default(api)
    } catch (error) {
      throw new ExtensionLoadError(`The extension ${source} failed to load: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  try {
    // Declared shapes build on each other in the order callbacks run: check them once every file is in.
    void registry.itemSchema
  } catch (error) {
    throw new ExtensionLoadError(`The extensions' schema declarations do not fit together. ${(error as Error).message}`)
  }
  return { registry, files }
}
