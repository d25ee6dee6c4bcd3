import { plugin } from 'bun'
import { join } from 'node:path'

/** The one import path extensions use for their types and `defineExtension`. */
const EXTENSION_MODULE = '#vitrine/extension'

const EXTENSION_FILE = join(import.meta.dir, 'extension.ts')
let provided = false

/**
 * Makes `import { defineExtension } from '#vitrine/extension'` work in an
 * extension file anywhere on disk. Inside this repository package.json's
 * `imports` maps it (for Bun, tsc and editors alike); a folder elsewhere
 * (EXTENSIONS_DIR=/srv/extensions) has no package.json of ours above it, so
 * the loader provides the module itself, before it imports any extension.
 * @example provideExtensionModule(); await import('/srv/extensions/10-members.ts')
 */
export function provideExtensionModule(): void {
  if (provided) return
  provided = true
  plugin({
    name: 'vitrine-extension-module',
    setup(build) {
      build.module(EXTENSION_MODULE, () => ({ contents: `export * from ${JSON.stringify(EXTENSION_FILE)}`, loader: 'ts' }))
    },
  })
}
