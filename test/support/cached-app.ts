import { listenForChanges, type Change, type LanguageSet } from '../../src/cache/change-listener'
import { ContentCache } from '../../src/cache/content-cache'
import { goLivesFor, type NextGoLives } from '../../src/cache/next-go-lives'
import type { AnswerCache, PreparedAnswer, SlotAnswer } from '../../src/cache/answer-slot'
import { FilterRegistry } from '../../src/hooks/registry'
import { createLogger } from '../../src/log'
import { testApp, type TestApp } from './app'

export interface CachedTestApp extends TestApp {
  cache: AnswerCache
  /** The types' next go-lives the listener keeps (C36), as main.ts wires them: none with a CACHE_MAX_AGE. */
  goLives: NextGoLives | undefined
  /** Resolves once the listener hears a change of `table` (from now on). */
  nextChange(table: string): Promise<Change>
  /** Resolves once the listener is (again) listening. */
  nextListening(): Promise<void>
  /** Resolves once the listener has lost its connection. */
  nextLost(): Promise<void>
}

/**
 * The app with the service's cache and change listener, as `bun run start`
 * wires them, with events a test can wait for instead of sleeping.
 * @example const api = await cachedTestApp(db.url); const changed = api.nextChange('entries')
 */
export async function cachedTestApp(databaseUrl: string, env: Record<string, string> = {}, filters = new FilterRegistry(), maxBytes = 64 * 1024 * 1024): Promise<CachedTestApp> {
  const cache = new ContentCache<SlotAnswer, PreparedAnswer>(maxBytes)
  const goLives = goLivesFor({ cacheMaxAge: Number(env.CACHE_MAX_AGE ?? 0) })
  const waiting: { kind: 'change' | 'listening' | 'lost'; table?: string; resolve: (change: any) => void }[] = []
  const settle = (kind: 'change' | 'listening' | 'lost', change?: Change) => {
    for (const waiter of [...waiting]) {
      if (waiter.kind === kind && (kind !== 'change' || waiter.table === change!.table)) {
        waiting.splice(waiting.indexOf(waiter), 1)
        waiter.resolve(change)
      }
    }
  }
  // The listener tells the cache first, then the test: by the time a wait resolves, the cache has acted.
  const handlers = {
    onListening: (languages: LanguageSet) => {
      cache.onListening(languages)
      goLives?.onListening()
      settle('listening')
    },
    onLost: () => {
      cache.onLost()
      goLives?.onLost()
      settle('lost')
    },
    onChange: (change: Change) => {
      cache.onChange(change)
      goLives?.onChange(change)
      settle('change', change)
    },
    onLanguages: (languages: LanguageSet) => cache.onLanguages(languages),
  }
  const wait = (kind: 'change' | 'listening' | 'lost', table?: string) => new Promise<any>((resolve) => waiting.push({ kind, table, resolve }))
  const listening = wait('listening')
  const listener = listenForChanges(databaseUrl, handlers, { timeoutMs: 5000, heartbeatMs: 200, log: createLogger('silent') })
  const api = testApp(databaseUrl, env, filters, cache, { goLives })
  await listening
  return {
    ...api,
    cache,
    goLives,
    nextChange: (table) => wait('change', table),
    nextListening: () => wait('listening'),
    nextLost: () => wait('lost'),
    async close() {
      await listener.stop()
      await api.close()
    },
  }
}
