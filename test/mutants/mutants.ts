/**
 * Regressions that must never ship unnoticed, each written as one text edit
 * to src/ and the test files that must catch it. `bun run test:mutants`
 * applies each to a copy of the repository and runs those files.
 *
 * Each edit's `find` must occur exactly once in its `file`. When the code moves, the runner
 * says which edit no longer applies: update `find` to the new text (keeping
 * the regression it stands for), never drop the entry to make it pass.
 */
export interface Mutant {
  /** Short and stable: `bun run test:mutants C19` runs the mutants whose id or regression mentions C19. */
  id: string
  /** The behaviour that would ship, naming the contract rule it breaks. */
  regression: string
  /** Usually one; several when the regression takes several places. */
  edits: Edit[]
  /** The test files that must fail with these edits. */
  tests: string[]
}

export interface Edit {
  file: string
  find: string
  replace: string
}

const CONTENT = ['test/content-contract.test.ts', 'test/content-properties.test.ts']
const HOOKS = ['test/hooks.test.ts']
const FAULTS = ['test/database-faults.test.ts']
const CURSOR = 'test/list-cursor.test.ts'
const COUNTS = 'test/live-entry-counts.test.ts'
const CACHE = 'test/cache.test.ts'
const FILTERS = ['test/list-filters.test.ts']
const LANES = 'test/heavy-lane.test.ts'
const SYNC = ['test/sync.test.ts']
const FIELDS = ['test/fields-alternates.test.ts']
const DISCOVERY_TOTALS = 'test/discovery-totals.test.ts'
const DISCOVERY_ROUTES = 'test/discovery-routes.test.ts'
const EVENTS = ['test/events.test.ts']
const REPLICAS = ['test/replicas.test.ts']
const QUOTAS = ['test/quotas.test.ts']
const EDGE = ['test/edge-purger.test.ts']
const SEARCH_BOX = ['test/search-box.test.ts']
const READS = ['test/declared-reads.test.ts']
const ANY_WRITER = 'test/any-writer.test.ts'
const WEBHOOKS = ['test/webhooks.test.ts']
const RULES = ['test/rules.test.ts']

export const MUTANTS: Mutant[] = [
  // C1, C2: the live condition, in each statement and each branch.
  {
    id: 'live-list-page',
    regression: 'C1/C2: the list page shows drafts and scheduled entries',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: "return sql`e.content_type_id = (select id from content_type) and e.status = 'published' and e.published_at <= now()`",
        replace: "return sql`e.content_type_id = (select id from content_type) and e.published_at <= now()`",
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'live-list-total',
    regression: 'C1/C18: meta.total counts embargoed entries (the kept counts are summed past now())',
    edits: [
      {
        file: 'src/content/list-statement.ts',
        find: '            and d.live_from <= now()\n        ) as dated,',
        replace: '        ) as dated,',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'live-slug-selected',
    regression: 'C1/C2: a hidden entry is found by its slug in the selected language',
    edits: [
      {
        file: 'src/content/entry-statement.ts',
        find: '        and ${isLive(sql)}\n        and (\n',
        replace: '        and (t.language_code = l.fallback or ${isLive(sql)})\n        and (\n',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'live-slug-fallback',
    regression: 'C1/C2: a hidden entry is found through its default-language slug (C19 fallback)',
    edits: [
      {
        file: 'src/content/entry-statement.ts',
        find: '        and ${isLive(sql)}\n        and (\n',
        replace: '        and (t.language_code = l.selected or ${isLive(sql)})\n        and (\n',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'live-embargo',
    regression: 'C1: an entry published with a future date is live at once (embargo ignored)',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: "e.status = 'published' and (e.published_at is null or e.published_at <= now())",
        replace: "e.status = 'published'",
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'live-status',
    regression: 'C1: drafts and scheduled entries with a past date are live',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: "e.status = 'published' and (e.published_at is null or e.published_at <= now())",
        replace: '(e.published_at is null or e.published_at <= now())',
      },
    ],
    tests: CONTENT,
  },

  // C14, C19: the language fallback and the slug lookup's rules.
  {
    id: 'fallback-tie-break',
    regression: 'C19: among fallback matches the highest id wins',
    edits: [
      {
        file: 'src/content/entry-statement.ts',
        find: '      order by t.language_code = l.selected desc, e.id\n',
        replace: '      order by t.language_code = l.selected desc, case when t.language_code = l.selected then e.id else -e.id end\n',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'selected-tie-break',
    regression: 'C19: among matches in the selected language the highest id wins',
    edits: [
      {
        file: 'src/content/entry-statement.ts',
        find: '      order by t.language_code = l.selected desc, e.id\n',
        replace: '      order by t.language_code = l.selected desc, case when t.language_code = l.selected then -e.id else e.id end\n',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'fallback-with-own-row',
    regression: 'C19: an entry written in the selected language is also found by its default-language slug',
    edits: [
      {
        file: 'src/content/entry-statement.ts',
        find: '          t.language_code = l.selected\n          or not exists (',
        replace: '          true\n          or not exists (',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'fallback-preferred',
    regression: 'C19: a default-language fallback beats a match in the selected language',
    edits: [{ file: 'src/content/entry-statement.ts', find: '      order by t.language_code = l.selected desc, e.id\n', replace: '      order by t.language_code = l.selected, e.id\n' }],
    tests: CONTENT,
  },
  {
    id: 'translation-fallback-lean',
    regression: 'C14: items show the default-language translation although one in the selected language exists',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: 'order by t.language_code = (select selected from language) desc',
        replace: 'order by t.language_code = (select selected from language) asc',
      },
    ],
    tests: CONTENT,
  },
  {
    id: 'translation-fallback-model',
    regression: 'C14: with a callback registered, items show the default-language translation',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: ': (translations!.find((t) => t.language_code === languages.selected) ?? ',
        replace: ': (',
      },
    ],
    // The whole model holds shownTranslation too: the row is taken from translations when only they are declared.
    tests: [...CONTENT, ...READS],
  },

  // C1, C11, C18, C39: the list's two ranges, the kept counts and the cursor (issue 11).
  {
    id: 'live-list-embargo',
    regression: 'C1/C2: the list page shows embargoed entries (the dated range starts above now())',
    edits: [
      {
        file: 'src/content/statement-fragments.ts',
        find: "return sql`e.content_type_id = (select id from content_type) and e.status = 'published' and e.published_at <= now()`",
        replace: "return sql`e.content_type_id = (select id from content_type) and e.status = 'published' and e.published_at is not null`",
      },
    ],
    tests: [...CONTENT, CURSOR],
  },
  {
    id: 'undated-offset',
    regression: 'C11: a page by number that starts among the undated entries skips as many of them as the whole offset',
    edits: [
      {
        file: 'src/content/list-pages.ts',
        find: 'sql`greatest(${offset}::int8 - (select dated from live_counts), 0)`',
        replace: 'sql`${offset}::int8`',
      },
    ],
    tests: [...CONTENT, CURSOR],
  },
  {
    id: 'cursor-repeats',
    regression: 'C39: a cursor page starts with the last entry of the page before (<= instead of <)',
    edits: [{ file: 'src/content/list-pages.ts', find: '(e.published_at, e.id) < (', replace: '(e.published_at, e.id) <= (' }],
    tests: [CURSOR],
  },
  {
    id: 'cursor-undated-repeats',
    regression: 'C39: among undated entries, a cursor page starts with the last entry of the page before',
    edits: [{ file: 'src/content/list-pages.ts', find: 'and e.id < ${after.id}', replace: 'and e.id <= ${after.id}' }],
    tests: [CURSOR],
  },
  {
    id: 'cursor-microseconds',
    regression: 'C39: a cursor keeps its publication time to the millisecond only (entries within one millisecond are skipped or repeated)',
    edits: [{ file: 'src/content/cursor.ts', find: "BigInt(fraction.padEnd(6, '0'))", replace: "BigInt(fraction.slice(0, 3).padEnd(6, '0'))" }],
    tests: [CURSOR],
  },
  {
    id: 'next-without-more',
    regression: 'C39/C2: rel="next" is sent after the last live entry (it tells that hidden entries follow, or leads to an empty page)',
    edits: [{ file: 'src/content/content-answer.ts', find: 'if (result.hasMore && last)', replace: 'if (last)' }],
    tests: [CURSOR],
  },
  {
    id: 'counts-update-old-rows',
    regression: 'C18: an update that unpublishes or moves an entry is counted as +1 without the -1 of the row it replaces',
    edits: [
      {
        file: 'sql/migrations/0014_settled_deltas.sql',
        find: "        select content_type_id, vitrine_live_from(published_at), -1\n        from old_rows\n        where status = 'published'\n",
        replace: "        select content_type_id, vitrine_live_from(published_at), 0\n        from old_rows\n        where status = 'published'\n",
      },
    ],
    tests: [COUNTS],
  },
  {
    id: 'counts-settled-future',
    regression: 'C18/C1: a row of an embargoed entry is written settled (live_from -infinity): the entry counts before its time',
    edits: [{ file: 'sql/migrations/0014_settled_deltas.sql', find: "  select case when published_at <= now() - interval '1 second' then '-infinity'::timestamptz else published_at end", replace: "  select case when published_at is not null then '-infinity'::timestamptz else published_at end" }],
    tests: [COUNTS],
  },
  {
    id: 'counts-fold-future',
    regression: 'C18/C1: folding also folds the rows of embargoed entries, which then count before their time',
    edits: [
      {
        file: 'sql/migrations/0003_live_entry_counts.sql',
        find: "      and (d.live_from <= now() - interval '1 second' or d.live_from is null)\n",
        replace: '      and true\n',
      },
    ],
    tests: [COUNTS],
  },
  {
    id: 'counts-fold-waits',
    regression: 'C18: a writer waits for another writer that is folding (advisory lock taken, not tried)',
    edits: [
      {
        file: 'sql/migrations/0003_live_entry_counts.sql',
        find: "    or not pg_try_advisory_xact_lock(hashtext('vitrine_fold_live_entry_counts')) then",
        replace: "    or pg_advisory_xact_lock(hashtext('vitrine_fold_live_entry_counts')) is null then",
      },
    ],
    tests: [COUNTS],
  },
  {
    id: 'drift-not-answered',
    regression: 'C18: a type whose kept count drifted is still answered from the kept count',
    edits: [{ file: 'src/content/live-count-check.ts', find: 'return this.#drifted.has(type)', replace: 'return false' }],
    tests: [COUNTS],
  },

  // C23, C26, C31: a failing callback fails the request closed.
  {
    id: 'callback-throws',
    regression: 'C23: a callback that throws is skipped and the unfiltered item is sent',
    edits: [
      {
        file: 'src/hooks/apply-item-filters.ts',
        find: '      throw failure(filter, error)\n    }\n    if (thenable) {',
        replace: '      continue\n    }\n    if (thenable) {',
      },
    ],
    tests: HOOKS,
  },
  {
    id: 'callback-undefined',
    regression: 'C26: a callback that returns undefined makes its item null instead of failing the request',
    edits: [
      {
        file: 'src/hooks/apply-item-filters.ts',
        find: "if (result === undefined) throw new FilterError(filter, 'returned undefined: a callback must return the item, or null.')",
        replace: 'if (result === undefined) return null',
      },
    ],
    tests: HOOKS,
  },
  {
    id: 'callback-timeout',
    regression: 'C31: a callback that never settles holds the request forever',
    edits: [
      {
        file: 'src/hooks/apply-item-filters.ts',
        find: 'return settleWithin(Promise.resolve(result), run.timeoutMs, filter).then(',
        replace: 'return Promise.resolve(result).then(',
      },
    ],
    tests: HOOKS,
  },
  {
    id: 'chain-waiting-rejection-unheard',
    regression: 'C23: an item that fails at once while another item still waits leaves that one\'s rejection unhandled (the process may end)',
    edits: [{ file: 'src/hooks/apply-item-filters.ts', find: '    for (const item of waiting) item.catch(() => {})\n', replace: '' }],
    tests: HOOKS,
  },
  {
    id: 'chain-order-trusted',
    regression: 'C27: an output whose added fields come first is served in that order',
    edits: [{ file: 'src/hooks/apply-item-filters.ts', find: '  if (inItemOrder(data)) return data', replace: '  return data' }],
    tests: HOOKS,
  },
  {
    id: 'chain-kept-output-shared',
    regression: 'C27: an output a callback keeps is served as that object: a later write to it (another item, another request) changes what is rendered',
    edits: [{ file: 'src/hooks/apply-item-filters.ts', find: '  if (inItemOrder(data)) return data === item ? data : { ...data }', replace: '  if (inItemOrder(data)) return data' }],
    tests: HOOKS,
  },
  {
    id: 'model-without-type',
    regression: 'C25/C54: the model comes without its content_type once it is read once for the page',
    edits: [{ file: 'src/content/statement-fragments.ts', find: '  model.content_type = contentType\n', replace: '' }],
    tests: [...HOOKS, ...READS],
  },

  // C36: a type's next go-live, remembered by the process while nothing is written (issue 45).
  {
    id: 'go-live-outlives-write',
    regression: 'C36: a remembered next go-live survives a write to its type: an entry scheduled sooner is served past its go-live',
    edits: [{ file: 'src/cache/next-go-lives.ts', find: 'if (change.typeIds.has(kept.typeId)) this.#known.delete(type)', replace: 'if (change.typeIds.has(-1)) this.#known.delete(type)' }],
    tests: [CACHE],
  },
  {
    id: 'go-live-outlives-moment',
    regression: 'C36: a remembered next go-live is used after its moment: answers after it never expire again',
    edits: [{ file: 'src/cache/next-go-lives.ts', find: 'if (kept !== undefined && (kept.at <= startedAt || kept.until <= startedAt)) {', replace: 'if (kept !== undefined && kept.until <= startedAt) {' }],
    tests: [CACHE],
  },
  {
    id: 'go-live-used-across-write',
    regression: 'C36: an answer that used a remembered go-live while a write to its type was heard (the write may be in its rows) keeps the old go-live',
    edits: [{ file: 'src/cache/next-go-lives.ts', find: 'if (found === remembered.typeId && this.#known.get(type) === remembered) return', replace: 'if (found === remembered.typeId) return' }],
    tests: [CACHE],
  },
  {
    id: 'go-live-remembered-with-max-age',
    regression: 'C33/C36: with a CACHE_MAX_AGE, a max-age is capped by a remembered go-live, which a write heard after the answer was sent cannot take back',
    edits: [{ file: 'src/cache/next-go-lives.ts', find: 'return config.cacheMaxAge === 0 ? new NextGoLives() : undefined', replace: 'return new NextGoLives()' }],
    tests: [CACHE],
  },
  {
    id: 'go-live-learned-across-write',
    regression: 'C36: a go-live read by a statement that ran while a write was heard is remembered (its snapshot may predate the write)',
    edits: [{ file: 'src/cache/next-go-lives.ts', find: 'if (listening && epoch === this.#epoch && typeId !== null) {', replace: 'if (listening && typeId !== null) {' }],
    tests: [CACHE],
  },

  // C38: the chain's output is kept per variant of what it read, and only while its answer is.
  {
    id: 'variant-ignores-reads',
    regression: 'C38: a kept output is served to a request whose headers differ in what the chain read',
    edits: [{ file: 'src/cache/variants.ts', find: 'const key = onlyKey ?? keyOf(signature, names.map(valueOf))', replace: 'const key = onlyKey ?? keyOf(signature, names.map(() => null))' }],
    tests: [CACHE],
  },
  {
    id: 'variant-keeps-volatile',
    regression: 'C38: the output of a volatile callback is kept and served again',
    edits: [{ file: 'src/cache/answer-slot.ts', find: 'const kept = read.place !== null && !reads?.volatile', replace: 'const kept = read.place !== null' }],
    tests: [CACHE],
  },
  {
    id: 'hit-without-own-fields',
    regression: "C29/C52: a hit in the same second as the one before goes without its request's own X-Request-Id (and a quota's fields)",
    edits: [{ file: 'src/cache/answer-slot.ts', find: '      this.#ownFields(response.headers, requestId, origin, decorate)\n', replace: '' }],
    tests: [CACHE],
  },
  {
    id: 'variant-outlives-answer',
    regression: 'C36/C38: an output computed from an answer that a write dropped is still served',
    edits: [{ file: 'src/cache/content-cache.ts', find: 'if (stored !== place.stored) return undefined', replace: 'if (stored !== place.stored) return ((output) => output && { output, storedAt: place.stored.storedAt, expiresAt: place.stored.expiresAt })(place.stored.value.variants.find(valueOf))' }],
    tests: [CACHE],
  },
  {
    id: 'variants-unbounded',
    regression: 'C38: a header with a new value on every request grows one answer\'s outputs without bound',
    edits: [{ file: 'src/cache/variants.ts', find: 'if (this.#kept.size <= this.maxCount && this.#bytes <= this.maxBytes) break', replace: 'break' }],
    tests: [CACHE],
  },

  // C22: database faults are a bounded 503, and abandoned work stops.
  {
    id: 'statement-timeout-503',
    regression: 'C22: a statement cancelled by statement_timeout (57014) answers 500',
    // 57014 is a timeout, and its class (57) is also "the server cannot run it now": both rules go.
    edits: [
      {
        file: 'src/db/read.ts',
        find: "if (code === 'DATABASE_TIMEOUT' || code === '57014') return",
        replace: "if (code === 'DATABASE_TIMEOUT') return",
      },
      { file: 'src/db/read.ts', find: '/^(53|57|58|40001|40P01)/', replace: '/^(53|58|40001|40P01)/' },
    ],
    tests: FAULTS,
  },
  {
    id: 'admin-termination-503',
    regression: 'C22: a backend ended by the administrator (57P01) answers 500',
    // A statement whose backend is ended gets 57P01 from the server, or ECONNRESET when the server
    // closed with input unread (the kernel's reset then comes first): every form it takes goes,
    // and the class 57 rule that would still call 57P01 a 503.
    edits: [
      { file: 'src/db/read.ts', find: "'57P01', '57P02', '57P03',", replace: "'57P02', '57P03'," },
      { file: 'src/db/read.ts', find: "'ECONNRESET', ", replace: '' },
      { file: 'src/db/read.ts', find: "'CONNECTION_CLOSED', ", replace: '' },
      { file: 'src/db/read.ts', find: '/^(53|57|58|40001|40P01)/', replace: '/^(53|58|40001|40P01)/' },
    ],
    tests: FAULTS,
  },
  {
    id: 'deadline-cancel',
    regression: 'C22: a statement given up at the deadline is not cancelled and keeps its connection',
    edits: [{ file: 'src/db/connect.ts', find: '.then(cancel)', replace: '.then(() => undefined)' }],
    tests: FAULTS,
  },
  {
    id: 'deadline',
    regression: 'C22: a request waits for the database as long as it takes',
    edits: [
      {
        file: 'src/db/read.ts',
        find: 'const rows = await withDeadline(statement, Math.max(1, deadline - performance.now()), () => statement.cancel())',
        replace: 'const rows = await statement',
      },
    ],
    tests: FAULTS,
  },
  {
    id: 'pool-statement-timeout',
    regression: 'C22: the service pool has no server-side statement_timeout',
    edits: [{ file: 'src/db/connect.ts', find: '    statementTimeoutMs: config.databaseTimeoutMs,\n', replace: '' }],
    tests: FAULTS,
  },
  // C40–C43: filtered lists.
  {
    id: 'search-live',
    regression: 'C42/C2: search finds drafts and embargoed entries',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: ' and ${row}.published and (${row}.published_at is null or ${row}.published_at <= now())`', replace: '`' }],
    tests: FILTERS,
  },
  {
    id: 'term-walk-filter',
    regression: 'C40: a page of one term walks the type without checking the term',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: 'sql`and (select walk from strategy) ${passes(sql, filters)}`', replace: 'sql`and (select walk from strategy)`' }],
    tests: FILTERS,
  },
  {
    id: 'term-counts-delete',
    regression: "C40/C18: a deleted entry's terms stay counted (the cascade removes them before a statement trigger could see them)",
    edits: [{ file: 'sql/migrations/0004_list_filters.sql', find: 'create trigger entries_terms_counted_out before delete on entries', replace: 'create trigger entries_terms_counted_out before delete on content_types' }],
    tests: FILTERS,
  },
  // C47: fair lanes.
  {
    id: 'lane-shared-connection',
    regression: 'C47: cheap statements are pipelined behind a heavy one on its connection and wait as long as it',
    edits: [{ file: 'src/db/read.ts', find: 'if (keepConnection) (statement', replace: 'if (false && keepConnection) (statement' }],
    tests: [LANES],
  },
  {
    id: 'lane-search-cheap',
    regression: 'C47: searches run outside the heavy lane and can take every connection',
    edits: [{ file: 'src/content/list-statement.ts', find: "return shape === 'search' || shape === 'match'", replace: "return shape === 'match'" }],
    tests: [LANES],
  },
  {
    id: 'lane-unbounded',
    regression: 'C47: the heavy lane lets every heavy statement run at once',
    edits: [{ file: 'src/db/lanes.ts', find: 'if (this.running < this.settings.slots && this.waiting.length === 0)', replace: 'if (true)' }],
    tests: [LANES],
  },
  // C48: sync.
  {
    id: 'sync-in-flight',
    regression: 'C48: a write whose transaction took its position before a sync and committed after it is never delivered',
    edits: [{ file: 'src/changes/sync-statement.ts', find: 'where c.xid = any (${inProgress}::xid8[])', replace: 'where false and c.xid = any (${inProgress}::xid8[])' }],
    tests: SYNC,
  },
  {
    id: 'sync-shared-rows',
    regression: 'C48: an author renamed or an image changed does not reach the entries that show it',
    edits: [{ file: 'src/changes/sync-statement.ts', find: "where l.shared_table = 'authors'", replace: "where l.shared_table = 'authors' and false" }],
    tests: SYNC,
  },
  {
    id: 'sync-go-lives',
    regression: 'C48/C1: an embargoed entry that goes live with no write is never delivered',
    edits: [{ file: 'src/changes/sync-statement.ts', find: '        and e.published_at > ${since.at}::timestamptz', replace: '        and false' }],
    tests: SYNC,
  },
  {
    id: 'sync-deleted-never-live',
    regression: 'C48/C2: deleted ids include entries that were never live (drafts, embargoed)',
    edits: [{ file: 'src/changes/sync-statement.ts', find: 'where ${liveInType(sql)} or t.may_be_held', replace: 'where true' }],
    tests: SYNC,
  },
  {
    id: 'sync-truncate',
    regression: 'C48: TRUNCATE entries leaves the deleted entries in every copy',
    edits: [{ file: 'sql/migrations/0005_change_log.sql', find: 'create trigger vitrine_log_truncate before truncate on entries', replace: 'create trigger vitrine_truncate_elsewhere before truncate on languages' }],
    tests: SYNC,
  },
  {
    id: 'sync-retention',
    regression: 'C48: tokens older than SYNC_RETENTION_DAYS are served (the log may no longer hold what they need)',
    edits: [{ file: 'src/changes/routes.ts', find: 'if (token) checkRetention(token, config.syncRetentionDays)', replace: 'if (false) checkRetention(token!, config.syncRetentionDays)' }],
    tests: SYNC,
  },
  // C44, C45: fields and alternates.
  {
    id: 'alternates-null-slugs',
    regression: 'C45: alternates list translations without a slug (language with slug null)',
    edits: [{ file: 'src/content/statement-fragments.ts', find: '      where t.entry_id = e.id\n        and t.slug is not null\n', replace: '      where t.entry_id = e.id\n' }],
    tests: FIELDS,
  },
  {
    id: 'alternates-other-entries',
    regression: "C45/C2: alternates hold every entry's translations (hidden entries' slugs leak), not the item's own",
    edits: [{ file: 'src/content/statement-fragments.ts', find: '      where t.entry_id = e.id\n        and t.slug is not null\n', replace: '      where t.slug is not null\n' }],
    tests: FIELDS,
  },
  {
    id: 'alternates-without-selected',
    regression: 'C45: alternates leave out the selected language',
    edits: [{ file: 'src/content/statement-fragments.ts', find: '        and t.slug is not null\n', replace: '        and t.slug is not null\n        and t.language_code <> (select selected from language)\n' }],
    tests: FIELDS,
  },
  {
    id: 'alternates-order',
    regression: 'C45: alternates are not ordered by language code',
    edits: [{ file: 'src/content/statement-fragments.ts', find: 'order by t.language_code collate "C"', replace: 'order by t.language_code desc' }],
    tests: FIELDS,
  },
  {
    id: 'terms-order',
    regression: 'C16: terms are ordered by id alone, not by position first',
    edits: [{ file: 'src/content/statement-fragments.ts', find: 'json_agg(${term} order by et.position, term.id)', replace: 'json_agg(${term} order by term.id)' }],
    tests: CONTENT,
  },
  {
    id: 'fields-alternates-not-loaded',
    regression: 'C44/C45: fields=alternates without include=alternates gives items without them',
    edits: [{ file: 'src/content/parameters.ts', find: 'const asked = (key: (typeof INCLUDE_VALUES)[number]) => include.includes(key) || (fields?.includes(key) ?? false)', replace: 'const asked = (key: (typeof INCLUDE_VALUES)[number]) => include.includes(key)' }],
    tests: FIELDS,
  },
  {
    id: 'fields-order',
    regression: 'C44: items keep the keys in the order fields names them, not in their usual order',
    edits: [
      { file: 'src/content/parameters.ts', find: 'return named.size === 0 ? null : itemKeys.filter((key) => named.has(key))', replace: 'return named.size === 0 ? null : [...named]' },
      { file: 'src/content/map-item.ts', find: 'for (const [key, value] of Object.entries(item)) if (fields.includes(key)) selected[key] = value', replace: 'for (const key of fields) if (Object.hasOwn(item, key)) selected[key] = (item as Record<string, unknown>)[key]' },
    ],
    tests: FIELDS,
  },
  {
    id: 'fields-before-chain',
    regression: 'C44: the selection applies to the items before the filter chain, so keys the callbacks add are not selected out',
    edits: [
      { file: 'src/content/prepare-answer.ts', find: 'const items = answer.rows.map((row) => toItem(row, config.mediaBaseUrl))', replace: 'const items = body.select(answer.rows.map((row) => toItem(row, config.mediaBaseUrl)) as ItemData[]) as ItemData[]' },
      { file: 'src/content/prepare-answer.ts', find: 'render(body.envelope(body.select(filtered)))', replace: 'render(body.envelope(filtered))' },
    ],
    tests: FIELDS,
  },
  {
    id: 'fields-cache-key',
    regression: 'C44/C35: the cache key leaves out fields and include: two selections share one answer',
    edits: [
      { file: 'src/content/routes.ts', find: 'countByScan, filters, shape]', replace: 'countByScan, filters]' },
      { file: 'src/content/routes.ts', find: "[slug, shape], () =>", replace: '[slug], () =>' },
    ],
    tests: FIELDS,
  },
  {
    id: 'fields-link',
    regression: 'C44/C43: Link URLs drop fields: the next page has whole items',
    edits: [{ file: 'src/content/content-answer.ts', find: "    if (shape.fields !== null) set('fields', shape.fields.join(','))\n", replace: '' }],
    tests: FIELDS,
  },
  // C46: discovery.
  {
    id: 'terms-embargoed',
    regression: 'C46/C2: term totals count embargoed entries (the kept rows are summed past now(), in the statement a list with a drifted type gets)',
    edits: [{ file: 'src/discovery/statements.ts', find: "          and d.content_type_id in (${keptTypes})\n          and d.live_from <= now()", replace: "          and d.content_type_id in (${keptTypes})\n          and d.live_from is not null" }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-embargoed-walk',
    regression: 'C46/C2: term totals of the walk count embargoed entries (a page term\'s kept rows are summed past now())',
    edits: [{ file: 'src/discovery/statements.ts', find: "          and d.content_type_id in (select id from counted_types)\n          and d.live_from <= now()", replace: "          and d.content_type_id in (select id from counted_types)\n          and d.live_from is not null" }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-dirty-trusted',
    regression: 'C46/C2: a term list trusts term_list_carried for terms whose counts moved since it was written (a writer that could not compact leaves the list stale)',
    edits: [
      { file: 'src/discovery/statements.ts', find: '    and c.term_id not in (select term_id from dirty)\n', replace: '' },
      { file: 'src/discovery/statements.ts', find: '      union all\n      select d.id, d.name\n      from dirty_carried d\n', replace: '' },
      { file: 'src/discovery/statements.ts', find: '      ) + (select count(*) from dirty_carried) as total,', replace: '      ) as total,' },
    ],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-carried-late',
    regression: 'C46/C1: a term that only embargoed entries carry is kept as carried from after its first go-live: it appears late, waiting for a write',
    edits: [{ file: 'sql/migrations/0018_lean_entry_triggers.sql', find: '          where r.live > 0\n        )\n      end as carried_from', replace: "          where r.live > 0\n        ) + interval '1 hour'\n      end as carried_from" }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-compaction-waits',
    regression: 'C46/C18: writers wait for each other on the term lists\' compaction (a lock taken, not tried)',
    edits: [{ file: 'sql/migrations/0018_lean_entry_triggers.sql', find: "  if current_setting('transaction_isolation') <> 'read committed'\n    or not pg_try_advisory_xact_lock(hashtext('vitrine_compact_term_lists')) then\n    return;\n  end if;", replace: "  perform pg_advisory_xact_lock(hashtext('vitrine_compact_term_lists'));" }],
    tests: [COUNTS],
  },
  {
    id: 'terms-moved-by-status-only',
    regression: 'C18/C46/C1: a published entry re-dated into the future (or back) leaves its terms counted as before: a term filter counts an embargoed entry (0018)',
    edits: [{ file: 'sql/migrations/0018_lean_entry_triggers.sql', find: "          and (o.status = 'published', o.content_type_id, vitrine_live_from(o.published_at))\n            is distinct from (n.status = 'published', n.content_type_id, vitrine_live_from(n.published_at))", replace: "          and (o.status = 'published', o.content_type_id)\n            is distinct from (n.status = 'published', n.content_type_id)" }],
    tests: FILTERS,
  },
  {
    id: 'terms-carried-stale',
    regression: 'C46/C1: a term list row whose carried_from changed is taken as unchanged and never rewritten (0018)',
    edits: [{ file: 'sql/migrations/0018_lean_entry_triggers.sql', find: '      and (c.taxonomy_id, c.name, c.carried_from) is not distinct from (f.taxonomy_id, f.name, f.carried_from)', replace: '      and (c.taxonomy_id, c.name) is not distinct from (f.taxonomy_id, f.name)' }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-undated-uncounted',
    regression: 'C46: a term carried only by undated published entries (no published_at) drops out of the term lists (0018)',
    edits: [{ file: 'sql/migrations/0018_lean_entry_triggers.sql', find: "        and (d.live_from <= now() - interval '1 second' or d.live_from is null)", replace: "        and d.live_from <= now() - interval '1 second'" }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'reads-shown-translation-bodiless',
    regression: 'C54: content.shownTranslation comes without its body: a reading time counts no words, a body extension adds null',
    edits: [{ file: 'src/content/statement-fragments.ts', find: "'meta_description', t.meta_description, 'body', t.body`", replace: "'meta_description', t.meta_description, 'body', null`" }],
    tests: READS,
  },
  {
    id: 'terms-namesakes',
    regression: "C46/C40: a term whose slug another term of its taxonomy shares shows its own count, not the filtered list's meta.total",
    edits: [{ file: 'src/discovery/statements.ts', find: 'when exists (${namesakes} and o.id <> p.id) then (', replace: 'when false then (' }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'terms-go-live',
    regression: 'C46/C36: a cached term list outlives the next go-live of its types',
    edits: [{ file: 'src/discovery/discovery-answer.ts', find: 'type === null ? ANY_TYPE : result.typeId, result.goLiveInSeconds)', replace: 'type === null ? ANY_TYPE : result.typeId, null)' }],
    tests: [DISCOVERY_TOTALS],
  },
  {
    id: 'any-type-kept',
    regression: 'C36/C46: an answer that counts every type (terms without type, content types) survives a write to one type',
    edits: [{ file: 'src/cache/answer-store.ts', find: 'if (answer.typeId === ANY_TYPE || (answer.typeId !== null && typeIds.has(answer.typeId)))', replace: 'if (answer.typeId !== null && answer.typeId !== ANY_TYPE && typeIds.has(answer.typeId))' }],
    tests: [DISCOVERY_ROUTES],
  },
  {
    id: 'media-traversal',
    regression: 'C46: /media serves any file the decoded path names, .. included',
    edits: [{ file: 'src/demo/media.ts', find: "const file = files.get(pathname.slice('/media/'.length))", replace: "const file = { path: join(directory, decodeURIComponent(pathname.slice('/media/'.length))), type: 'image/jpeg' }" }],
    tests: [DISCOVERY_ROUTES],
  },
  {
    id: 'media-with-database-url',
    regression: 'C46: the demo images are served with a DATABASE_URL of yours too',
    edits: [{ file: 'src/config.ts', find: ": readText(env, 'DATABASE_URL') === undefined,", replace: ': true,' }],
    tests: [DISCOVERY_ROUTES],
  },
  {
    id: 'sync-deleted-at-read-time',
    regression: 'C48/C2: an embargoed entry withdrawn before its time shows in deleted once that time has passed',
    edits: [{ file: 'src/changes/sync-statement.ts', find: 'l.left_from <= l.changed_at as was_live', replace: 'l.left_from <= now() as was_live' }],
    tests: SYNC,
  },
  {
    id: 'events-never-live',
    regression: 'C49/C2: the event stream names drafts and embargoed entries written, before their time',
    edits: [{ file: 'src/changes/event-statement.ts', find: '      where t.may_be_held\n        or now.live', replace: '      where true' }],
    tests: EVENTS,
  },
  {
    id: 'events-in-flight',
    regression: 'C49: a write whose transaction commits after a later one is never told (the mark forgets the transactions in flight)',
    edits: [{ file: 'src/changes/event-statement.ts', find: 'where c.xid = any (${inProgress}::xid8[])', replace: 'where false' }],
    tests: EVENTS,
  },
  {
    id: 'events-no-go-live',
    regression: 'C49/C1: an embargoed entry going live is told only at the next write, not at its second',
    edits: [{ file: 'src/changes/event-feed.ts', find: 'if (read.nextGoLiveInMs !== null) this.#goLive', replace: 'if (false) this.#goLive' }],
    tests: EVENTS,
  },
  {
    id: 'events-ids-skip',
    regression: 'C49: every event of a read carries the read\'s last position: a client cut off between two resumes past the second',
    edits: [{ file: 'src/changes/event-feed.ts', find: 'index === mine.length - 1 ? endId : startId', replace: 'endId' }],
    tests: EVENTS,
  },
  {
    id: 'events-slow-kept',
    regression: 'C49: a subscriber that never reads is kept, its backlog growing without bound',
    edits: [{ file: 'src/changes/event-subscriber.ts', find: 'if (chunk.byteLength > room && room < this.maxBacklogBytes) return this.drop()\n', replace: '' }],
    tests: EVENTS,
  },
  {
    id: 'events-stop-waits',
    regression: 'C49: SIGTERM waits SHUTDOWN_GRACE_MS for the event streams, which never end by themselves',
    edits: [{ file: 'src/main.ts', find: "    // Event streams never finish by themselves: they end now, and their clients reconnect elsewhere.\n    events?.close()\n", replace: '' }],
    tests: ['test/operations.test.ts'],
  },
  {
    id: 'events-catch-up-each',
    regression: 'C49/C47: every client resuming after a deploy reads the log on its own (thousands of heavy statements at once)',
    edits: [{ file: 'src/changes/event-feed.ts', find: '    this.#catchUps.set(key, entry)\n', replace: '' }],
    tests: EVENTS,
  },
  // C50: read replicas keep C36.
  {
    id: 'replica-answer-unchecked',
    regression: 'C50/C36: a replica answer is served whatever the replica had replayed (stale after a notified write)',
    edits: [{ file: 'src/db/replicas.ts', find: 'if (required !== null && vouched >= required) return rows', replace: 'return rows' }],
    tests: REPLICAS,
  },
  {
    id: 'replica-position-pending-ignored',
    regression: 'C50/C36: a notified change whose WAL position is not known yet counts as the previous position',
    edits: [{ file: 'src/db/notified-positions.ts', find: '      if (this.#pending.has(key)) return null\n', replace: '' }],
    tests: REPLICAS,
  },
  {
    id: 'replica-lag-ignored',
    regression: 'C50: a replica lagging past REPLICA_MAX_LAG_MS stays in the rotation',
    edits: [{ file: 'src/db/replicas.ts', find: 'if (lagMs > this.options.maxLagMs)', replace: 'if (lagMs > Infinity)' }],
    tests: REPLICAS,
  },
  {
    id: 'replica-failure-not-retried',
    regression: 'C50/C22: a read on a replica that fails or loses its connection is a 503, not retried elsewhere',
    edits: [{ file: 'src/db/replicas.ts', find: '        replica = this.#next(undefined, replica)\n        continue', replace: '        throw error' }],
    tests: REPLICAS,
  },
  {
    id: 'replica-never-returns',
    regression: 'C50: a replica that left the rotation never comes back',
    edits: [{ file: 'src/db/replicas.ts', find: '      if (!replica.serving) {', replace: '      if (!replica.serving && replica.reason === undefined) {' }],
    tests: REPLICAS,
  },
  {
    id: 'change-handlers-not-isolated',
    regression: 'C36: a change handler that throws keeps the handlers after it (cache, positions, events) from hearing the change',
    edits: [{ file: 'src/cache/change-listener.ts', find: '    try {\n      call(handler)\n      return true\n    } catch (error) {\n      log.error', replace: '    call(handler)\n    if (Math.random() > 2) {\n      const error = undefined\n      log.error' }],
    tests: ['test/change-listener.test.ts'],
  },
  {
    id: 'change-handler-failure-forgotten',
    regression: 'C36: a handler that throws on a change (it may have missed it: the cache could keep a stale answer) goes on as if it had heard it, instead of starting again as after a lost connection',
    edits: [{ file: 'src/cache/change-listener.ts', find: "      if (tell(handler, 'onLost', (each) => each.onLost())) tell(handler, 'onListening', (each) => each.onListening(heardAgain))", replace: '      void heardAgain' }],
    tests: ['test/change-listener.test.ts'],
  },
  // C52: per-client quotas.
  {
    id: 'quota-left-most-hop',
    regression: 'C52: behind a trusted proxy, the left-most X-Forwarded-For address (whatever the client wrote) is believed',
    edits: [{ file: 'src/quotas/client.ts', find: 'for (let i = hops.length - 1; i >= 0; i--) {', replace: 'for (let i = 0; i < hops.length; i++) {' }],
    tests: QUOTAS,
  },
  {
    id: 'quota-heavy-on-hits',
    regression: 'C52: an answer from the cache costs a heavy unit',
    edits: [{ file: 'src/quotas/client-quotas.ts', find: '      if (hit) return hit\n', replace: "      if (hit) return (this.#settings.rateLimitHeavy > 0 && this.#buckets.take(buckets, 'heavy', now), hit)\n" }],
    tests: QUOTAS,
  },
  {
    id: 'quota-events-joiner-refused',
    regression: "C52/C49: a client joining another's catch-up read gets that client's 429",
    edits: [{ file: 'src/changes/event-feed.ts', find: "        if (error instanceof HttpError && error.status === 429) return this.#readSince(since)\n", replace: '' }],
    tests: QUOTAS,
  },
  {
    id: 'quota-fields-twice',
    regression: "C52: an answer the slot made through the routes gets the fields again (the exposed names and Cache-Control's qualifier twice)",
    edits: [{ file: 'src/quotas/client-quotas.ts', find: "    if (headers.has('RateLimit-Policy')) return\n", replace: '' }],
    tests: QUOTAS,
  },
  {
    id: 'quota-429-cached',
    regression: 'C52: a 429 may be kept by a shared cache (Cache-Control not no-store)',
    edits: [{ file: 'src/quotas/client-quotas.ts', find: "'Cache-Control': 'no-store' })", replace: "'Cache-Control': 'public, max-age=60' })" }],
    tests: QUOTAS,
  },
  // C51: the edge purge.
  {
    id: 'purge-dropped-after-failure',
    regression: 'C51: a purge the target refused (non-2xx, refused, timeout) is dropped instead of retried',
    edits: [{ file: 'src/edge/purge-queue.ts', find: '    this.#keep(unsent)\n', replace: '' }],
    tests: EDGE,
  },
  {
    id: 'second-purge-missing',
    regression: 'C51: keys are purged once, not once more after DATABASE_TIMEOUT_MS (a cache keeps an answer that was in flight)',
    edits: [{ file: 'src/edge/edge-purger.ts', find: '      for (const queue of this.#queues) queue.add(keys)\n    }, this.#options.timeoutMs)', replace: '    }, this.#options.timeoutMs)' }],
    tests: EDGE,
  },
  {
    id: 'purge-without-duty',
    regression: 'C51: every instance sharing a database purges every change (no advisory lock)',
    edits: [{ file: 'src/db/duty.ts', find: 'select pg_try_advisory_lock(${options.lock}::int8) as taken', replace: 'select true as taken' }],
    tests: EDGE,
  },
  {
    id: 'metrics-raw-path-label',
    regression: 'C53: the request metric labels a request by its raw path (slugs, ids) instead of its route template: one series per URL',
    edits: [{ file: 'src/app.ts', find: 'recordRequest(request.method, routeOf(request.url), response.status', replace: 'recordRequest(request.method, new URL(request.url).pathname, response.status' }],
    tests: ['test/metrics.test.ts'],
  },
  {
    id: 'edge-lists-after-read',
    regression: 'C51: the lists of a notified type wait for the change-log read instead of going as the notification arrives',
    edits: [{ file: 'src/edge/edge-purger.ts', find: '      if (lists.length > 0) this.#purge(lists)', replace: '      void lists' }],
    tests: ['test/edge-purger.test.ts'],
  },
  {
    id: 'events-gone-type-silent',
    regression: 'C49: the streams of a type deleted or renamed stay open and never hear of it again, instead of getting event: reset and ending',
    edits: [{ file: 'src/changes/event-feed.ts', find: '    if (since !== null) this.#endStreamsOfGoneTypes(read.mark)\n', replace: '' }],
    tests: ['test/events.test.ts'],
  },
  {
    id: 'events-heartbeat-without-id',
    regression: 'C49: heartbeats carry no id: a client whose types stay quiet keeps the id it opened with, and after the retention its resume is a spurious reset',
    edits: [{ file: 'src/changes/event-feed.ts', find: 'const chunk = this.#mark === null ? HEARTBEAT :', replace: 'const chunk = this.#mark !== undefined ? HEARTBEAT :' }],
    tests: ['test/events.test.ts'],
  },
  {
    id: 'events-mark-never-refreshed',
    regression: 'C49: on a site nobody writes to, the feed never reads again: the ids its heartbeats hand out age past SYNC_RETENTION_DAYS',
    edits: [{ file: 'src/changes/event-feed.ts', find: 'if (this.#mark !== null && BigInt(Date.now())', replace: 'if (this.#mark === undefined && BigInt(Date.now())' }],
    tests: ['test/events.test.ts'],
  },
  {
    id: 'embedded-failed-start-waits',
    regression: 'An embedded PostgreSQL that exits while starting is asked to stop by the failed start\'s cleanup, which then waits its whole 10 s for an exit that has been',
    edits: [{ file: 'src/db/embedded.ts', find: '    stopped ??= Promise.resolve()\n', replace: '' }],
    tests: ['test/startup.test.ts'],
  },
  {
    id: 'metrics-trailing-slash-other',
    regression: 'C53/C3: a URL with a trailing slash, which its route serves, is labelled other, and so are the hits its output then serves on the plain URL',
    edits: [{ file: 'src/http/route-template.ts', find: '    if (end - start > 1 && url.charCodeAt(end - 1) === SLASH) end--\n', replace: '' }],
    tests: ['test/metrics.test.ts'],
  },
  {
    id: 'embedded-left-running',
    regression: 'A fault thrown outside main while the embedded PostgreSQL starts leaves it running after the exit (its stop is not handed to runCommand)',
    edits: [{ file: 'src/db/open.ts', find: 'onStarting: onFailure,', replace: 'onStarting: undefined,' }],
    tests: ['test/startup.test.ts'],
  },
  {
    id: 'metrics-hit-raw-path',
    regression: 'C53: a cache hit is counted under the path its output was kept for, not its route template: every hit URL makes a series',
    edits: [{ file: 'src/cache/answer-slot.ts', find: 'output.route ??= this.#routeOf(request.url)', replace: 'output.route ??= targetOf(request.url)' }],
    tests: ['test/metrics.test.ts'],
  },
  {
    id: 'metrics-worker-missing',
    regression: 'C53: under WORKERS a scrape leaves one worker\'s counts out: the counters are not exact',
    edits: [{ file: 'src/metrics/worker-scrapes.ts', find: '...answers.filter((answer) => answer !== undefined)', replace: '...answers.slice(1).filter((answer) => answer !== undefined)' }],
    tests: ['test/metrics.test.ts'],
  },
  // C55: the search box.
  {
    id: 'search-highlight-unescaped',
    regression: 'C55: highlights are the field as written with <mark> around matches: a title holding <b> or & is markup (HTML injection)',
    edits: [{ file: 'src/content/search-query.ts', find: 'sql`ts_headline(${config}, ${escapeHtml(sql, text)}, ${query}, ${HEADLINE_OPTIONS})`', replace: 'sql`ts_headline(${config}, ${text}, ${query}, ${HEADLINE_OPTIONS})`' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'search-prefix-quoted',
    regression: 'C55: a quoted last word ("archi") also matches as a prefix',
    edits: [{ file: 'src/content/search-query.ts', find: "(head.match(/\"/g)?.length ?? 0) % 2 === 1 || word.includes('\"') || ", replace: '' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'search-prefix-one-letter',
    regression: 'C55: a one-letter last word matches as a prefix (every word it begins)',
    edits: [{ file: 'src/content/search-query.ts', find: 'export const MIN_PREFIX_LENGTH = 2', replace: 'export const MIN_PREFIX_LENGTH = 1' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'search-prefix-not-ranked-below',
    regression: 'C55: a prefix-only match ranks by ts_rank_cd with the exact ones, above an exact match found only in the body',
    edits: [{ file: 'src/content/search-query.ts', find: 'else (-1 / (1 + ts_rank_cd(${document}, ${query})::float8))::real end', replace: 'else ts_rank_cd(${document}, ${query}) end' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'search-postings-prefix-not-ranked-below',
    regression: 'C55: a one-word search ranks a prefix-only match by its score with the exact ones, above an exact match found only in the body',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: 'case when bool_or(p.lexeme = ${exact}) then max(p.score) filter (where p.lexeme = ${exact})::real else (-1 / (1 + sum(p.score)::real::float8))::real end', replace: 'sum(p.score)::real' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'search-ranked-uncounted',
    regression: 'C43: a one-word search by relevance counts the matches it stored (long documents, the fallback language) and not those it pages in rank order from their index',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: 'select stored.dated + ranked.dated as dated, stored.undated + ranked.undated as undated', replace: 'select stored.dated, stored.undated' }],
    tests: [COUNTS],
  },
  {
    id: 'search-ranked-page-shallow',
    regression: 'C39/C42: a one-word search by relevance reads only per_page rows in rank order whatever the page number: page 2 and after repeat or miss entries',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: "const ranks = 'offset' in start ? start.offset + rows : rows", replace: 'const ranks = rows' }],
    tests: FILTERS,
  },
  {
    id: 'search-ranked-cursor-bound-strict',
    regression: 'C39/C42: after a cursor, a one-word search by relevance seeks past the cursor\'s rank: the entries tied with it that come after it in list order are skipped',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: "and c.rank <= ${start.after.rank ?? '0'}::real", replace: "and c.rank < ${start.after.rank ?? '0'}::real" }],
    tests: [COUNTS, ...FILTERS],
  },
  {
    id: 'search-prefixes-not-ranked-below',
    regression: 'C55: three letters typed rank a prefix-only match by its kept sum with the exact ones, above an exact match found only in the body',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: 'return sql`coalesce(${row}.exact::real, (-1 / (1 + ${row}.score::real::float8))::real)`', replace: 'return sql`coalesce(${row}.exact::real, ${row}.score::real)`' }],
    tests: [COUNTS],
  },
  {
    id: 'search-prefixes-trusted',
    regression: 'C43/C1: three letters typed count the kept prefix rows of entries no longer live (a re-dated or unpublished one the sums have not followed)',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: '        and k.prefix = r.low collate "C"\n        and ${liveInType(sql, sql`k`)}', replace: '        and k.prefix = r.low collate "C"' }],
    tests: [COUNTS],
  },
  {
    id: 'search-prefixes-stop-word',
    regression: 'C55: three letters that are a stop word as a word ("the") find nothing: the choice of search_prefixes is null, and neither way is read',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: 'select coalesce(count(*) = 1 and bool_and(length(r.low) = 3 and r.low = w.exact), false) as kept', replace: 'select count(*) = 1 and bool_and(length(r.low) = 3 and r.low = w.exact) as kept' }],
    tests: SEARCH_BOX,
  },
  {
    id: 'signal-while-starting',
    regression: 'A SIGTERM while the service starts ends the process at once: its embedded PostgreSQL keeps running',
    edits: [{ file: 'src/cli/run.ts', find: '  for (const [signal, listener] of Object.entries(signalled)) process.on(signal, listener)\n', replace: '' }],
    tests: ['test/startup.test.ts'],
  },
  {
    id: 'signal-while-migrating',
    regression: 'A SIGTERM while `bun run migrate` migrates its own embedded database ends it at once: that PostgreSQL keeps running',
    edits: [{ file: 'src/cli/migrate.ts', find: "}, { stopOnSignals: ['SIGTERM', 'SIGINT'], during: '' })", replace: '})' }],
    tests: ['test/startup.test.ts'],
  },
  {
    id: 'search-prefixes-exact-kept',
    regression: 'C55/C56: the three-letter word deleted from a text leaves its score in search_prefixes: the entry still ranks as an exact match',
    edits: [{ file: 'sql/migrations/0016_search_prefixes.sql', find: '      exact = case when g.exact then null else k.exact end,', replace: '      exact = k.exact,' }],
    tests: [COUNTS],
  },
  {
    id: 'search-prefixes-state',
    regression: 'C56/C1: search_prefixes do not follow their postings\' state: a re-dated entry keeps its old publication time there',
    edits: [{ file: 'sql/migrations/0016_search_prefixes.sql', find: '      published_at = c.published_at,\n', replace: '' }],
    tests: [COUNTS, ANY_WRITER],
  },
  {
    id: 'terms-counted-out-unlocked',
    regression: 'C56/C40: an entry deleted while a writer removes one of its terms counts the term out twice (its rows read without waiting for that writer)',
    edits: [{ file: 'sql/migrations/0014_settled_deltas.sql', find: '      where et.entry_id = old.id\n      for update\n', replace: '      where et.entry_id = old.id\n' }],
    tests: [ANY_WRITER],
  },
  {
    id: 'guard-entries-writer',
    regression: 'C56/C1/C2: an update of entries (unpublished, moved to another type) never reaches its guard: the search finds the entry as before',
    edits: [{ file: 'sql/migrations/0010_entry_guards.sql', find: 'create trigger entries_0_guarded_update after update on entries\n  referencing old table as old_rows new table as new_rows\n  for each statement execute function vitrine_entries_guarded();\n', replace: '' }],
    tests: [COUNTS, ANY_WRITER],
  },
  {
    id: 'guard-rows-lock-only',
    regression: 'C56: a writer of an entry\'s rows only locks its guard: a repeatable read writer of the entry that took its snapshot before is not refused, and leaves search rows and counts wrong',
    edits: [{ file: 'sql/migrations/0010_entry_guards.sql', find: '  on conflict (entry_id) do update\n  set writes = entry_guards.writes + 1;\nend', replace: '  on conflict (entry_id) do nothing;\n  perform 1 from entry_guards g where g.entry_id = any (entry_ids) order by g.entry_id for update;\nend' }],
    tests: [ANY_WRITER],
  },
  {
    id: 'guard-after-readers',
    regression: 'C56: the guard of entry_terms fires after the triggers that read the entry: a read committed writer of a term reads the entry before waiting for its writer, and counts the term of an entry just unpublished',
    edits: [{ file: 'sql/migrations/0010_entry_guards.sql', find: "entry_table || '_0_guarded_insert'", replace: "case entry_table when 'entry_terms' then 'zz_guarded_insert' else entry_table || '_0_guarded_insert' end" }],
    tests: [ANY_WRITER],
  },
  {
    id: 'postings-guard-writer',
    regression: 'C55/C1/C2: search_postings do not follow their entry\'s state: a short entry unpublished is still found by a one-word search',
    edits: [{ file: 'sql/migrations/0019_guarded_bulk_writes.sql', find: '    -- Unpublished: the postings go, by key.\n    if unpublished then', replace: '    if false then' }],
    tests: [COUNTS, ANY_WRITER],
  },
  {
    id: 'guard-renumbered-kept',
    regression: 'C56: an update of entries that changes an id keeps the old id\'s guard (0019 looks for a changed id only when the pairs say there is one): a guard of no entry',
    edits: [{ file: 'sql/migrations/0019_guarded_bulk_writes.sql', find: '      count(*) <> count(n.id)\n', replace: '      false\n' }],
    tests: [ANY_WRITER],
  },
  {
    id: 'search-long-documents-missed',
    regression: 'C42/C55: a one-word search reads the postings alone: long documents, which have none, are never found by it',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: '      ${indexedHits(sql`not s.posted`)}\n      union all\n', replace: '' }],
    tests: [COUNTS],
  },
  {
    id: 'search-own-row',
    regression: 'C56/C1: a search page trusts the kept rows: an entry whose kept row says live (a drift) is answered though it is a draft',
    edits: [{ file: 'src/content/filtered-list-statement.ts', find: '      where e.id = p.id\n        and e.content_type_id = (select id from content_type)\n        and ${isLive(sql)}\n      offset 0', replace: '      where e.id = p.id\n      offset 0' }],
    tests: [ANY_WRITER],
  },
  {
    id: 'search-documents-translation-update',
    regression: 'C55/C42: search_documents misses a writer: an update of a translation\'s text leaves the search matching its old words',
    edits: [{ file: 'sql/migrations/0008_search_documents.sql', find: 'create trigger entry_translations_searched_update after update on entry_translations\n  referencing old table as old_rows new table as new_rows\n  for each statement execute function vitrine_translations_updated_searched();\n', replace: '' }],
    tests: [COUNTS],
  },
  {
    id: 'search-documents-translation-delete',
    regression: 'C55/C2: search_documents misses a writer: a deleted translation (or entry) is still found by a search',
    edits: [{ file: 'sql/migrations/0008_search_documents.sql', find: 'create trigger entry_translations_searched_delete after delete on entry_translations\n  referencing old table as old_rows\n  for each statement execute function vitrine_translations_deleted_searched();\n', replace: '' }],
    tests: [COUNTS],
  },
  {
    id: 'search-postings-update-writer',
    regression: 'C55/C1/C2: search_postings misses a writer: an entry unpublished or a translation edited leaves one-word searches answering from the old postings',
    edits: [{ file: 'sql/migrations/0011_lean_search.sql', find: "  else\n    -- Our triggers change a row's document only (its key never): old and new rows pair by key.", replace: "  elsif false then\n    -- Our triggers change a row's document only (its key never): old and new rows pair by key." }],
    tests: [COUNTS],
  },
  {
    id: 'search-postings-score',
    regression: 'C42/C55: a one-word search ranks by the number of a word\'s positions, not by ts_rank_cd (title, excerpt and body weighed alike)',
    edits: [{ file: 'sql/migrations/0009_search_postings.sql', find: "(case w when 'A' then 1.0::float4 when 'B' then 0.4::float4 when 'C' then 0.2::float4 else 0.1::float4 end)::float8", replace: '1.0::float8' }],
    tests: SEARCH_BOX,
  },
  // C54: what callbacks declare they read.
  {
    id: 'reads-declared-part-not-loaded',
    regression: 'C54: a declared part not loaded: a callback declaring fieldValues gets a model without them',
    edits: [{ file: 'src/content/statement-fragments.ts', find: "parts.has('fieldValues') ? fieldValues : null", replace: 'null' }],
    tests: READS,
  },
  {
    id: 'reads-undeclared-part-undefined',
    regression: 'C54: an undeclared part silently undefined: a callback reading a part it did not declare gets undefined, not an error',
    edits: [{ file: 'src/hooks/declared-reads.ts', find: '        throw new UndeclaredReadError(callbackLabel, part, reads)', replace: '        return undefined' }],
    tests: READS,
  },
  {
    id: 'reads-whole-model-lost',
    regression: 'C54/§6 rule 2: beside callbacks that declare, one without reads no longer gets the whole model',
    edits: [{ file: 'src/hooks/declared-reads.ts', find: 'if (declarations.some((reads) => reads === null)) return MODEL_PARTS', replace: 'if (declarations.every((reads) => reads === null)) return MODEL_PARTS' }],
    tests: READS,
  },
  {
    id: 'reads-lean-field-twice',
    regression: 'C54: with translations declared the item\'s title comes from the lean row while the model also loads them: the page reads translations twice',
    edits: [{ file: 'src/content/statement-fragments.ts', find: "modelParts.has('translations') || modelParts.has('shownTranslation') ? null : translation,", replace: 'translation,' }],
    tests: READS,
  },
  // C57: webhooks.
  {
    id: 'webhook-lost-on-crash',
    regression: 'C57: a message leaves the table when it is sent, not when it is delivered: a receiver down when the instance crashes never gets it',
    edits: [{ file: 'src/webhooks/webhook-delivery.ts', find: '        const attemptedAt = Date.now()\n', replace: '        const attemptedAt = Date.now()\n        await sql`delete from webhook_deliveries where id = ${message.id}::int8`\n' }],
    tests: WEBHOOKS,
  },
  {
    id: 'webhook-retry-new-id',
    regression: 'C57: a retry is a new message (a new webhook-id): receivers cannot tell it from another change',
    edits: [{ file: 'src/webhooks/webhook-delivery.ts', find: '        last_outcome = ${outcome}\n', replace: "        last_outcome = ${outcome}, message_id = 'msg_' || md5(random()::text)\n" }],
    tests: WEBHOOKS,
  },
  {
    id: 'webhook-go-live-unsent',
    regression: 'C57: an entry whose publication time comes with no write is never told (the scheduled post of Ghost#10226)',
    edits: [{ file: 'src/webhooks/webhook-statement.ts', find: '      select g.id\n      from (${goLivesSince(sql, at, null)}) g', replace: '      select g.id\n      from (${goLivesSince(sql, at, null)}) g\n      where false' }],
    tests: WEBHOOKS,
  },
  {
    id: 'webhook-guard-names-skipped',
    regression: 'C57: the address guard checks literal addresses only: a host name that resolves to loopback or to the metadata address is delivered to',
    edits: [{ file: 'src/webhooks/address-guard.ts', find: 'const refused = allowPrivate ? undefined : addresses.find((each) => isRefusedAddress(each.address))', replace: 'const refused = undefined as { address: string } | undefined' }],
    tests: WEBHOOKS,
  },
  // Issue 44: the rules stand in the repository, held to their tests and their pages.
  {
    id: 'rules-test-removed',
    regression: "Traceability: a rule's tests go (C27's two tests renamed away): the rule has no test and nobody notices",
    edits: [
      { file: 'test/hooks.test.ts', find: "  test('C27: added fields come after the default ones; removed fields are absent'", replace: "  test('added fields come after the default ones; removed fields are absent'" },
      { file: 'test/hooks.test.ts', find: "  test('C27: an output a callback keeps", replace: "  test('an output a callback keeps" },
    ],
    tests: RULES,
  },
  {
    id: 'rules-default-drifted',
    regression: 'Traceability: a default changed on one page only (HOOK_TIMEOUT_MS 2000 in docs/configuration.md, 1000 in docs/rules.md, C31)',
    edits: [{ file: 'docs/configuration.md', find: '| `HOOK_TIMEOUT_MS` | `1000` |', replace: '| `HOOK_TIMEOUT_MS` | `2000` |' }],
    tests: RULES,
  },
  // Issue 45: the remembered date-time check.
  {
    id: 'date-time-remembers-invalid',
    regression: 'C31/C13: the date-time check remembers a value it refused as valid, so a wrong timestamp passes from its second time on',
    edits: [{ file: 'src/hooks/item-schema.ts', find: '    if (!check(value)) return false', replace: '    if (!check(value)) {\n      valid.add(value)\n      return false\n    }' }],
    tests: ['test/item-schema.test.ts'],
  },
  // Issue 45: the list statement flattened per shape, and C31's closed-shape check with a set of keys.
  {
    id: 'list-shape-forgets-highlights',
    regression: 'C55: the list statement\'s shape key leaves out highlights, so a page asked with include=highlights gets the text of one without them (or the other way round)',
    edits: [{ file: 'src/content/list-statement.ts', find: " ${options.highlights ? 'highlights' : ''}", replace: '' }],
    tests: ['test/statement-text.test.ts'],
  },
  {
    id: 'closed-shape-takes-extra-keys',
    regression: 'C31: a callback output with a key its declaration does not add passes the check',
    edits: [{ file: 'src/hooks/item-schema.ts', find: 'if (!keys.has(key)) return mismatch(value)', replace: 'if (!keys.has(key) && key.startsWith(\'__\')) return mismatch(value)' }],
    tests: ['test/item-schema.test.ts'],
  },
  // Issue 45: a content route's plain GET answered outside the framework (src/content/routes.ts, src/http/request-policy.ts).
  {
    id: 'plain-get-without-cors',
    regression: 'C29: a plain GET answered outside the framework fails without its CORS headers',
    edits: [{ file: 'src/http/request-policy.ts', find: '    Object.assign(set.headers, cors(request))\n', replace: '' }],
    tests: ['test/plain-get.test.ts'],
  },
  {
    id: 'plain-get-failure-bare',
    regression: 'C4, C22, C29: a plain GET that fails outside the framework gets the error body without the request id, nosniff, CORS and Cache-Control',
    edits: [{ file: 'src/http/request-policy.ts', find: '      response = withSetHeaders(failed, set.headers)', replace: '      response = failed' }],
    tests: ['test/plain-get.test.ts'],
  },
  {
    id: 'plain-get-repeated-parameter',
    regression: 'A repeated query parameter (lang=fr&lang=en) is read outside the framework by a rule of its own (the last value), not by the framework\'s',
    edits: [{ file: 'src/content/routes.ts', find: '      if (name in query) return null\n', replace: '' }],
    tests: ['test/plain-get.test.ts'],
  },
]
