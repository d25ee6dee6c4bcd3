-- Search that follows the text once (contract C42, C55, C56): search_documents keeps no copy of its
-- entry (entry_guards, 0010, has the entry's state once per entry), and search_postings holds the
-- words of short documents only. The design, the designs measured against it and their numbers:
-- sql/search-structure.md.
--
-- What the triggers keep true, for every writer (any isolation level, with 0010's guards):
--   - search_documents: one row per translation, (entry_id, language_code, document), document being
--     vitrine_search_document() of its language, title, excerpt and body; `posted` (generated) when
--     the document has at most 128 lexemes;
--   - search_postings: for every posted document whose entry is published (its guard says so), one
--     row per lexeme with its score and the guard's content_type_id, published_at and author_id;
--     no other row.
-- For whom: a search of one word reads the postings of short documents (an index-only range) and
-- the GIN index of long ones (`not posted`); other searches read both GIN indexes. A long article
-- costs its vector and GIN entries only, and a change of its entry's status, date, type or author
-- writes one guard row, not a row per word.

-- 1. The copies of the entry go (0008 kept them up to date on every update of entries). ----------
drop trigger entries_searched_update on entries;
drop function vitrine_entries_searched();
drop function vitrine_search_posting_drift();
drop view search_document_postings;
drop function vitrine_search_document_drift();
drop view search_document_rows;
drop index search_documents_match;

alter table search_documents
  drop column content_type_id,
  drop column published,
  drop column published_at,
  drop column author_id,
  -- A posting row costs about 100 bytes and a change of the entry's state rewrites every posting of
  -- it; the vector and its GIN entry cost about 40 bytes a lexeme and nothing on a change of state.
  -- Up to 128 lexemes (about 200 words) a document is posted: a one-word search reads it from the
  -- postings' index alone. A longer one is found through its GIN index and ranked from its vector.
  add column posted boolean generated always as (length(document) <= 128) stored;

-- One GIN index each for posted and unposted documents: a one-word search reads only the second
-- (the postings have the first's matches); other searches read both.
create index search_documents_posted_match on search_documents using gin (document) where posted;
create index search_documents_unposted_match on search_documents using gin (document) where not posted;
-- No parallel scans of these tables (entry_guards: 0010): the GIN arm a one-word search skips (behind a
-- one-time filter) was planned with a Gather whose two workers started all the same, twice a
-- statement (a word in 1% of a million entries: 184 ms with them). A search is one request among
-- many on a few cores.
alter table search_documents set (parallel_workers = 0);
alter table entry_guards set (parallel_workers = 0);

-- What search_documents holds, computed from entry_translations: what the triggers insert, what a
-- repair writes, and what the drift check compares with.
create view search_document_rows as
  select t.entry_id, t.language_code, vitrine_search_document(t.language_code, t.title, t.excerpt, t.body) as document
  from entry_translations t;

-- What search_postings holds, computed from search_documents and entry_guards.
create view search_document_postings as
  select d.language_code, p.lexeme, d.entry_id, g.content_type_id, g.published, g.published_at, g.author_id, p.score
  from search_documents d
  join entry_guards g on g.entry_id = d.entry_id
  cross join lateral vitrine_document_postings(d.document) p
  where d.posted
    and g.published;

-- The postings of documents no longer posted (long ones) go, by their own keys.
delete from search_postings p
using search_documents d
cross join lateral unnest(d.document) u
where not d.posted
  and p.language_code = d.language_code
  and p.lexeme = u.lexeme
  and p.entry_id = d.entry_id;

-- 2. entry_translations, per statement: documents made, replaced, removed. No read of the entry: ---
-- its state is its guard's, which the statement's guard trigger (0010) has updated already.
create or replace function vitrine_translations_inserted_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  insert into search_documents (entry_id, language_code, document)
  select n.entry_id, n.language_code, vitrine_search_document(n.language_code, n.title, n.excerpt, n.body)
  from new_rows n;
  return null;
end
$$;

-- An update: a key gone is deleted, a new key inserted, and a key kept whose text changed gets its
-- new document in place (the postings then change by the words that differ).
create or replace function vitrine_translations_updated_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from search_documents s
  using old_rows o
  where s.entry_id = o.entry_id
    and s.language_code = o.language_code
    and not exists (select 1 from new_rows n where n.entry_id = o.entry_id and n.language_code = o.language_code);
  update search_documents s
  set document = vitrine_search_document(n.language_code, n.title, n.excerpt, n.body)
  from new_rows n
  join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
  where s.entry_id = n.entry_id
    and s.language_code = n.language_code
    and (n.title, n.excerpt, n.body) is distinct from (o.title, o.excerpt, o.body);
  insert into search_documents (entry_id, language_code, document)
  select n.entry_id, n.language_code, vitrine_search_document(n.language_code, n.title, n.excerpt, n.body)
  from new_rows n
  where not exists (select 1 from old_rows o where o.entry_id = n.entry_id and o.language_code = n.language_code);
  return null;
end
$$;

-- TRUNCATE of entry_translations, or of entries (which cascades to it): both tables are truncated,
-- at the cost of truncating them, not of a delete per row.
create or replace function vitrine_translations_truncated_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  truncate search_documents, search_postings;
  return null;
end
$$;

-- 3. search_documents, per statement: the postings of posted documents of published entries. ----
create or replace function vitrine_search_documents_posted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if tg_op = 'INSERT' then
    insert into search_postings
    select n.language_code, p.lexeme, n.entry_id, g.content_type_id, true, g.published_at, g.author_id, p.score
    from new_rows n
    join entry_guards g on g.entry_id = n.entry_id
    cross join lateral vitrine_document_postings(n.document) p
    where n.posted
      and g.published;
  elsif tg_op = 'DELETE' then
    -- Through the primary key: the old document's own lexemes (none were kept for a long one).
    delete from search_postings p
    using old_rows o
    cross join lateral unnest(o.document) u
    where o.posted
      and p.language_code = o.language_code
      and p.lexeme = u.lexeme
      and p.entry_id = o.entry_id;
  else
    -- Our triggers change a row's document only (its key never): old and new rows pair by key.
    -- Only the postings that differ are written (a title edited: the words added or removed; a
    -- lexeme's score depends on its weights, not its positions).
    with was as materialized (
      select o.language_code, p.lexeme, o.entry_id, p.score
      from old_rows o
      join new_rows n on n.entry_id = o.entry_id and n.language_code = o.language_code
      join entry_guards g on g.entry_id = o.entry_id
      cross join lateral vitrine_document_postings(o.document) p
      where o.posted
        and g.published
        and o.document <> n.document
    ),
    now_kept as materialized (
      select n.language_code, p.lexeme, n.entry_id, g.content_type_id, g.published_at, g.author_id, p.score
      from new_rows n
      join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
      join entry_guards g on g.entry_id = n.entry_id
      cross join lateral vitrine_document_postings(n.document) p
      where n.posted
        and g.published
        and o.document <> n.document
    ),
    gone as (
      delete from search_postings p
      using was w
      where p.language_code = w.language_code
        and p.lexeme = w.lexeme
        and p.entry_id = w.entry_id
        and not exists (select 1 from now_kept k where k.language_code = w.language_code and k.lexeme = w.lexeme and k.entry_id = w.entry_id)
    ),
    changed as (
      update search_postings p
      set score = k.score
      from now_kept k
      join was w on w.language_code = k.language_code and w.lexeme = k.lexeme and w.entry_id = k.entry_id
      where p.language_code = k.language_code
        and p.lexeme = k.lexeme
        and p.entry_id = k.entry_id
        -- Compared before the posting is looked up: most postings of an edited text are unchanged.
        and w.score is distinct from k.score
    )
    insert into search_postings
    select k.language_code, k.lexeme, k.entry_id, k.content_type_id, true, k.published_at, k.author_id, k.score
    from now_kept k
    where not exists (select 1 from was w where w.language_code = k.language_code and w.lexeme = k.lexeme and w.entry_id = k.entry_id);
  end if;
  return null;
end
$$;

-- 4. An entry's state changed (0010), its postings follow: in the guard trigger of entries, under --
-- the guards it has just updated (a trigger on entry_guards itself fired on every touch of a guard
-- too: 0.4 ms a statement). The statements read the transition tables, whose sizes the planner knows
-- (a function taking arrays was planned, once generic, as a scan of every posting). Each runs only
-- when it has rows. The row trigger of replicated entries (0012) does the same for its row.
create or replace function vitrine_entries_guarded() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  unpublished boolean;
  published boolean;
  moved boolean;
begin
  if tg_op = 'UPDATE' then
    insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
    select n.id, n.content_type_id, n.status = 'published', n.published_at, n.author_id
    from new_rows n
    left join old_rows o on o.id = n.id
    where (n.content_type_id, n.status, n.published_at, n.author_id) is distinct from (o.content_type_id, o.status, o.published_at, o.author_id)
    order by n.id
    on conflict (entry_id) do update
    set content_type_id = excluded.content_type_id,
      published = excluded.published,
      published_at = excluded.published_at,
      author_id = excluded.author_id,
      writes = entry_guards.writes + 1;
    -- An id changed (no row hangs off the entry, or the foreign keys would have refused it).
    delete from entry_guards g
    using old_rows o
    where g.entry_id = o.id
      and not exists (select 1 from new_rows n where n.id = o.id);
    -- One pass over the pairs: which of the three kinds of change there are.
    select coalesce(bool_or(o.status = 'published' and n.status <> 'published'), false),
      coalesce(bool_or(n.status = 'published' and o.status <> 'published'), false),
      coalesce(bool_or(o.status = 'published' and n.status = 'published' and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)), false)
    into unpublished, published, moved
    from old_rows o
    join new_rows n on n.id = o.id;
    -- Unpublished: the postings go, by key.
    if unpublished then
      delete from search_postings p
      using old_rows o
      join new_rows n on n.id = o.id
      join search_documents d on d.entry_id = o.id
      cross join lateral unnest(d.document) u
      where o.status = 'published'
        and n.status <> 'published'
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    end if;
    -- Published: they come.
    if published then
      insert into search_postings
      select d.language_code, p.lexeme, d.entry_id, n.content_type_id, true, n.published_at, n.author_id, p.score
      from new_rows n
      join old_rows o on o.id = n.id
      join search_documents d on d.entry_id = n.id
      cross join lateral vitrine_document_postings(d.document) p
      where n.status = 'published'
        and o.status <> 'published'
        and d.posted;
    end if;
    -- Published before and after, another type, date or author: the entry's postings change.
    if moved then
      update search_postings p
      set content_type_id = n.content_type_id, published_at = n.published_at, author_id = n.author_id
      from new_rows n
      join old_rows o on o.id = n.id
      join search_documents d on d.entry_id = n.id
      cross join lateral unnest(d.document) u
      where o.status = 'published'
        and n.status = 'published'
        and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    end if;
  elsif tg_op = 'DELETE' then
    delete from entry_guards g
    using old_rows o
    where g.entry_id = o.id;
  end if;
  return null;
end
$$;

-- 5. Repair (the drift functions: 0013). -------------------------------------------------------

-- Rebuilds the guards, search_documents and search_postings from the base tables: after writes with
-- the triggers off. Blocks writers of entries and entry_translations while it runs.
create or replace function vitrine_repair_search_documents() returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  lock table entries in share row exclusive mode;
  lock table entry_translations in share row exclusive mode;
  truncate search_documents, search_postings;
  delete from entry_guards g
  where not exists (select 1 from entries e where e.id = g.entry_id);
  insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
  select e.id, e.content_type_id, e.status = 'published', e.published_at, e.author_id
  from entries e
  on conflict (entry_id) do update
  set content_type_id = excluded.content_type_id,
    published = excluded.published,
    published_at = excluded.published_at,
    author_id = excluded.author_id
  where (entry_guards.content_type_id, entry_guards.published, entry_guards.published_at, entry_guards.author_id)
    is distinct from (excluded.content_type_id, excluded.published, excluded.published_at, excluded.author_id);
  -- The postings come with the documents (the insert trigger above).
  insert into search_documents (entry_id, language_code, document)
  select r.entry_id, r.language_code, r.document
  from search_document_rows r;
end
$$;

revoke execute on function vitrine_repair_search_documents() from public;
