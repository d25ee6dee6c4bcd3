import { afterAll, expect, test } from 'bun:test'
import { everyHandler, listenForChanges, type Change, type ChangeHandlers } from '../src/cache/change-listener'
import { createLogger } from '../src/log'
import { createTestDatabase } from './support/database'
import { addContentType, addLanguage } from './support/fixtures'
import { waitFor } from './support/wait'

/**
 * One change signal feeds the cache, the replicas' positions and the event feed (and will feed the
 * purger and the metrics): a handler that throws must never keep the others from hearing a change,
 * nor cost the listener its connection (C36: every cache would then be bypassed).
 */
const db = await createTestDatabase()
afterAll(() => db.sql.end())

class ThrowingHandler implements ChangeHandlers {
  onListening(): void {
    throw new Error('onListening broke')
  }
  onLost(): void {
    throw new Error('onLost broke')
  }
  onChange(): void {
    throw new Error('onChange broke')
  }
  onLanguages(): void {
    throw new Error('onLanguages broke')
  }
}

test('C36: a change handler that throws is logged, and the handlers after it still hear every change', async () => {
  const heard = { listening: 0, lost: 0, changes: [] as Change[], languages: 0 }
  const recorder: ChangeHandlers = {
    onListening: () => heard.listening++,
    onLost: () => heard.lost++,
    onChange: (change) => heard.changes.push(change),
    onLanguages: () => heard.languages++,
  }
  const logged: { msg: string; event: string; handler: string }[] = []
  const log = createLogger('error', (line) => logged.push(JSON.parse(line)))
  const listener = listenForChanges(db.url, everyHandler([new ThrowingHandler(), recorder], log), { timeoutMs: 5000, heartbeatMs: 200, log })
  try {
    await waitFor('the recorder hears that the listener listens', () => heard.listening === 1)
    await addContentType(db.sql, 'page')
    await waitFor('the recorder hears the content type', () => heard.changes.some((change) => change.table === 'content_types'))
    await addLanguage(db.sql, 'fr')
    await waitFor('the recorder hears the languages read again', () => heard.languages === 1)
    expect(heard.lost).toBe(0)
    expect(heard.listening).toBe(1)
    const failures = logged.filter((line) => line.msg === 'a change handler failed; the others were told')
    expect(failures.map((line) => line.handler)).toContain('ThrowingHandler')
    // After a failed change it is told it lost the changes (which throws too): the others are not.
    expect(new Set(failures.map((line) => line.event))).toEqual(new Set(['onListening', 'onChange', 'onLost', 'onLanguages']))
  } finally {
    await listener.stop()
  }
})

test('C36: a handler that throws on a change may have missed it: it alone is told onLost, then onListening with the languages, and then hears changes again', async () => {
  const calls: string[] = []
  let failNext = true
  const flaky: ChangeHandlers = {
    onListening: (languages) => calls.push(`listening ${[...languages.codes].sort().join(',')}`),
    onLost: () => calls.push('lost'),
    onChange: (change) => {
      calls.push(`change ${change.table}`)
      if (failNext) {
        failNext = false
        throw new Error('a bug in the middle of a change')
      }
    },
    onLanguages: () => calls.push('languages'),
  }
  const others = { listening: 0, lost: 0, changes: 0 }
  const steady: ChangeHandlers = {
    onListening: () => others.listening++,
    onLost: () => others.lost++,
    onChange: () => others.changes++,
    onLanguages: () => {},
  }
  const log = createLogger('error', () => {})
  const listener = listenForChanges(db.url, everyHandler([flaky, steady], log), { timeoutMs: 5000, heartbeatMs: 200, log })
  try {
    await waitFor('both hear that the listener listens', () => calls.length === 1 && others.listening === 1)
    const listening = calls[0]!
    await addContentType(db.sql, 'essay')
    await waitFor('the flaky handler is heard again', () => calls.length >= 4)
    await addContentType(db.sql, 'note')
    await waitFor('the next change reaches it', () => calls.length >= 5)
    expect(calls).toEqual([listening, 'change content_types', 'lost', listening, 'change content_types'])
    expect(others).toEqual({ listening: 1, lost: 0, changes: 2 })
  } finally {
    await listener.stop()
  }
})
