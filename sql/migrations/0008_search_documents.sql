-- Search documents (contract C42, C55): one narrow row per translation, kept by triggers.
-- The design, what it costs writers, and its failure modes: sql/search-structure.md.
--
-- What the triggers keep true: for every row of entry_translations there is exactly one row of
-- search_documents with its (entry_id, language_code), whose `document` is
-- vitrine_search_document() of the translation's language, title, excerpt and body, and whose
-- content_type_id, published, published_at and author_id are its entry's (published: status =
-- 'published'); and no other row. For every writer that writes in read committed (the default),
-- any statement kind, COPY and TRUNCATE included.
-- For whom: a search (C42) finds its matches through this table's GIN index and filters them on
-- the row itself (the type, C1's live condition, the author): no lookup of the entry and no read
-- of the translation's text per match, as the generated column of 0004 needed.

create function vitrine_search_document(language_code text, title text, excerpt text, body text) returns tsvector
language sql
immutable
parallel safe
set search_path from current
as $$
  select setweight(to_tsvector(vitrine_search_config(language_code), coalesce(title, '')), 'A')
    || setweight(to_tsvector(vitrine_search_config(language_code), coalesce(excerpt, '')), 'B')
    || setweight(to_tsvector(vitrine_search_config(language_code), coalesce(body, '')), 'C')
$$;

create table search_documents (
  entry_id bigint not null,
  language_code text not null,
  content_type_id bigint not null,
  published boolean not null,
  published_at timestamptz,
  author_id bigint,
  document tsvector not null,
  primary key (entry_id, language_code)
);

-- What search_documents holds, computed from the base tables: what the triggers write, what a
-- repair writes, and what the drift check compares with.
create view search_document_rows as
  select t.entry_id, t.language_code, e.content_type_id, e.status = 'published' as published, e.published_at, e.author_id,
    vitrine_search_document(t.language_code, t.title, t.excerpt, t.body) as document
  from entry_translations t
  join entries e on e.id = t.entry_id;

-- Filled from the generated column, computed already (no second to_tsvector of every translation).
insert into search_documents (entry_id, language_code, content_type_id, published, published_at, author_id, document)
select t.entry_id, t.language_code, e.content_type_id, e.status = 'published', e.published_at, e.author_id, t.search_document
from entry_translations t
join entries e on e.id = t.entry_id;

create index search_documents_match on search_documents using gin (document);

-- The generated column and its index: replaced by the table above (writers would pay both).
drop index entry_translations_search;
alter table entry_translations drop column search_document;

-- entry_translations, per statement: the rows written are made, the rows removed go; an update
-- that changes neither the key nor the text keeps its row. The entries are locked (share) before
-- they are read: a writer that changes an entry at the same time either waits for this
-- statement's commit and then updates the rows made here, or has committed and is read here.
create function vitrine_translations_inserted_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  perform 1 from entries e where e.id in (select entry_id from new_rows) order by e.id for share of e;
  insert into search_documents
  select r.* -- the view has the table's columns, in its order
  from new_rows n
  join search_document_rows r on r.entry_id = n.entry_id and r.language_code = n.language_code;
  return null;
end
$$;

-- An update: a key gone is deleted, a new key inserted, and a key kept whose text changed gets its
-- new document in place (an update, not a delete and an insert: 0009 then rewrites only the
-- postings that changed).
create function vitrine_translations_updated_searched() returns trigger
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
  perform 1 from entries e where e.id in (select entry_id from new_rows) order by e.id for share of e;
  update search_documents s
  set document = vitrine_search_document(n.language_code, n.title, n.excerpt, n.body)
  from new_rows n
  join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
  where s.entry_id = n.entry_id
    and s.language_code = n.language_code
    and (n.title, n.excerpt, n.body) is distinct from (o.title, o.excerpt, o.body);
  insert into search_documents
  select r.* -- the view has the table's columns, in its order
  from new_rows n
  join search_document_rows r on r.entry_id = n.entry_id and r.language_code = n.language_code
  where not exists (select 1 from old_rows o where o.entry_id = n.entry_id and o.language_code = n.language_code);
  return null;
end
$$;

create function vitrine_translations_deleted_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from search_documents s
  using old_rows o
  where s.entry_id = o.entry_id
    and s.language_code = o.language_code;
  return null;
end
$$;

-- TRUNCATE of entry_translations, or of entries (which cascades to it): nothing is left.
create function vitrine_translations_truncated_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from search_documents;
  return null;
end
$$;

-- entries, per statement: what the rows of its translations copy of it. Deleted entries take
-- their translations with them (on delete cascade), whose trigger removes the rows.
create function vitrine_entries_searched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  update search_documents s
  set content_type_id = n.content_type_id,
    published = n.status = 'published',
    published_at = n.published_at,
    author_id = n.author_id
  from new_rows n
  where s.entry_id = n.id
    and (s.content_type_id, s.published, s.published_at, s.author_id) is distinct from (n.content_type_id, n.status = 'published', n.published_at, n.author_id);
  return null;
end
$$;

create trigger entry_translations_searched_insert after insert on entry_translations
  referencing new table as new_rows
  for each statement execute function vitrine_translations_inserted_searched();
create trigger entry_translations_searched_update after update on entry_translations
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_translations_updated_searched();
create trigger entry_translations_searched_delete after delete on entry_translations
  referencing old table as old_rows
  for each statement execute function vitrine_translations_deleted_searched();
create trigger entry_translations_searched_truncate after truncate on entry_translations
  for each statement execute function vitrine_translations_truncated_searched();
create trigger entries_searched_update after update on entries
  referencing new table as new_rows
  for each statement execute function vitrine_entries_searched();

-- Where search_documents and a fresh computation from the base tables disagree, now: one row
-- per (entry_id, language_code) that is missing, extra or different; none when they agree.
create function vitrine_search_document_drift()
returns table (entry_id bigint, language_code text, kept boolean, computed boolean)
language sql
stable
set search_path from current
as $$
  select coalesce(k.entry_id, c.entry_id), coalesce(k.language_code, c.language_code), k.entry_id is not null, c.entry_id is not null
  from search_documents k
  full join search_document_rows c on c.entry_id = k.entry_id and c.language_code = k.language_code
  where k.entry_id is null
    or c.entry_id is null
    or (k.content_type_id, k.published, k.published_at, k.author_id, k.document)
      is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.document)
$$;

-- Rebuilds search_documents from the base tables: after writes with the triggers off. Blocks
-- writers of entries and entry_translations while it runs.
create function vitrine_repair_search_documents() returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  lock table entries in share row exclusive mode;
  lock table entry_translations in share row exclusive mode;
  delete from search_documents;
  insert into search_documents
  select *
  from search_document_rows;
end
$$;
