import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { relative, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { provideExtensionModule } from './extension-alias'
import { FilterRegistry } from './registry'

/** An extension file could not be loaded; the message names it. The start stops. */
export class ExtensionLoadError extends Error {}

/**
 * Loads every `*.ts` file directly in `dir` (relative to the working
 * directory), in file-name order, but tests beside them (`*.test.ts`), and
 * calls each one's default export with `{ addFilter }`.
 * @example const registry = await loadExtensions('src/hooks/extensions')
 */
export async function loadExtensions(dir: string): Promise<{ registry: FilterRegistry; files: string[] }> {
  if (!existsSync(dir)) return { registry: new FilterRegistry(), files: [] }
  const files = (await readdir(dir, { withFileTypes: true }))
    .filter((file) => file.isFile() && file.name.endsWith('.ts') && !file.name.endsWith('.d.ts') && !file.name.endsWith('.test.ts'))
    .map((file) => file.name)
    .sort()
  const registry = await loadExtensionFiles(files.map((file) => resolve(dir, file)))
  return { registry, files }
}

/**
 * Loads these extension files, in this order, into one registry.
 * @example const registry = await loadExtensionFiles(['src/hooks/examples/reading-time.ts'])
 */
export async function loadExtensionFiles(paths: string[]): Promise<FilterRegistry> {
  const registry = new FilterRegistry()
  provideExtensionModule()
  for (const file of paths) {
    const path = resolve(file)
    // Named from the working directory when it lies below it, else by its full path.
    const source = path.startsWith(process.cwd() + sep) ? relative(process.cwd(), path) : path
    try {
      const module = await import(pathToFileURL(path).href)
      if (typeof module.default !== 'function') throw new Error('its default export is not a function; see src/hooks/README.md.')
      await module.default(registry.apiFor(source))
    } catch (error) {
      throw new ExtensionLoadError(`The extension ${source} failed to load: ${loadFailure(error)}`)
    }
  }
  try {
    // Declared shapes build on each other in the order callbacks run: check them once every file is in.
    void registry.itemSchema
  } catch (error) {
    throw new ExtensionLoadError(`The extensions' schema declarations do not fit together. ${(error as Error).message}`)
  }
  return registry
}

/** A position in a file, as Bun's build messages give it. */
interface BuildPosition {
  line: number
  column: number
}

/**
 * What went wrong, in one line. A syntax error reaches `import()` as a build
 * message, or, when there are several, as an AggregateError saying only
 * "2 errors building …": the (first) build message, with its line and column,
 * is what an author needs.
 * @example loadFailure(new AggregateError([buildMessage], '1 error building "x.ts"')) // 'Expected ";" but found "error" (line 1, column 8)'
 */
function loadFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const messages: unknown[] = error instanceof AggregateError ? error.errors : [error]
  const first = messages[0] as { message?: unknown; position?: BuildPosition | null } | undefined
  if (typeof first?.message !== 'string') return error.message
  const at = first.position ? ` (line ${first.position.line}, column ${first.position.column})` : ''
  const more = messages.length > 1 ? `, and ${messages.length - 1} more` : ''
  return `${first.message}${at}${more}`
}
