-- Search postings (contract C42, C55): one row per word of each search document, kept by triggers
-- on search_documents (0008). The design, what it costs writers, and its failure modes:
-- sql/search-structure.md ("Postings").
--
-- What the triggers keep true: for every row of search_documents of a published entry and every lexeme of its
-- `document`, exactly one row of search_postings with its language_code, entry_id, the row's
-- content_type_id, published, published_at and author_id, and `score`, the lexeme's ts_rank_cd
-- against the document (search_document_postings); and no other row.
-- For whom: a search of one word, or of one word as the user types it (C55), reads the range of
-- that word, or of the words it begins, from the primary key alone (an index-only scan: about
-- 70 bytes a match), instead of one search_documents row with its whole vector per match.

create table search_postings (
  language_code text not null,
  lexeme text collate "C" not null,
  entry_id bigint not null,
  content_type_id bigint not null,
  published boolean not null,
  published_at timestamptz,
  author_id bigint,
  score float8 not null
);

-- A lexeme's ts_rank_cd against its document, from its positions' weights: for a query of one
-- lexeme (or one prefix), ts_rank_cd adds, for each position, 1 / (1 / weight) with the default
-- weights {0.1, 0.2, 0.4, 1.0} (D, C, B, A) as float4, in float8, in position order; a prefix's
-- is the sum over the lexemes it begins. Exact to the bit once cast to real (checked on every
-- lexeme of the benchmark's data, and by test/live-entry-counts.test.ts). One SELECT, so that
-- PostgreSQL inlines it where it is used (a call per lexeme cost writers more than the rest).
create function vitrine_document_postings(document tsvector) returns table (lexeme text, score float8)
language sql
immutable
parallel safe
as $$
  select u.lexeme, (
    select sum(1.0::float8 / (1.0::float8 / (case w when 'A' then 1.0::float4 when 'B' then 0.4::float4 when 'C' then 0.2::float4 else 0.1::float4 end)::float8))
    from unnest(u.weights) w
  )
  from unnest(document) u
$$;

-- What search_postings holds, computed from search_documents: the rows of published entries
-- only (what a search can find), so that a draft or scheduled entry's words cost nothing, and
-- publishing or unpublishing one inserts or deletes its postings (cheaper than updating them).
create view search_document_postings as
  select d.language_code, p.lexeme, d.entry_id, d.content_type_id, d.published, d.published_at, d.author_id, p.score
  from search_documents d
  cross join lateral vitrine_document_postings(d.document) p
  where d.published;

insert into search_postings
select *
from search_document_postings;

-- Built after the rows (sorted once, not one insertion at a time).
alter table search_postings add primary key (language_code, lexeme, entry_id) include (content_type_id, published, published_at, author_id, score);

-- search_documents, per statement: the postings of the rows removed go, those of the rows added
-- come. An update (a translation's text, or its entry's state) writes only the postings that
-- differ: a title edited changes the postings of the words added or removed, not the others'
-- (a lexeme's score depends on its weights, not on its positions).
create function vitrine_search_documents_posted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if tg_op = 'INSERT' then
    insert into search_postings
    select n.language_code, p.lexeme, n.entry_id, n.content_type_id, n.published, n.published_at, n.author_id, p.score
    from new_rows n
    cross join lateral vitrine_document_postings(n.document) p
    where n.published;
  elsif tg_op = 'DELETE' then
    -- Through the primary key: the old row's own lexemes.
    delete from search_postings p
    using old_rows o
    cross join lateral unnest(o.document) u
    where o.published
      and p.language_code = o.language_code
      and p.lexeme = u.lexeme
      and p.entry_id = o.entry_id;
  else
    -- Our triggers never change a row's key: old and new rows pair by it. Unpublished: the
    -- postings go, by key. Published: they come. Published before and after, same document (a new
    -- publication time, type or author): their entry's columns change. A new document: below.
    -- Each statement only when it has rows to write: planned for transition tables of unknown
    -- size, an empty one still cost a scan of the postings.
    if exists (select 1 from old_rows o join new_rows n using (entry_id, language_code) where o.published and not n.published) then
      delete from search_postings p
      using old_rows o
      join new_rows n on n.entry_id = o.entry_id and n.language_code = o.language_code
      cross join lateral unnest(o.document) u
      where o.published
        and not n.published
        and p.language_code = o.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = o.entry_id;
    end if;
    insert into search_postings
    select n.language_code, p.lexeme, n.entry_id, n.content_type_id, n.published, n.published_at, n.author_id, p.score
    from new_rows n
    join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
    cross join lateral vitrine_document_postings(n.document) p
    where n.published
      and not o.published;
    if exists (
      select 1
      from old_rows o
      join new_rows n using (entry_id, language_code)
      where o.published
        and n.published
        and o.document = n.document
        and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)
    ) then
      update search_postings p
      set content_type_id = n.content_type_id, published_at = n.published_at, author_id = n.author_id
      from new_rows n
      join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
      cross join lateral unnest(n.document) u
      where o.published
        and n.published
        and o.document = n.document
        and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)
        and p.language_code = n.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = n.entry_id;
    end if;
    -- A new document of a published row: only the postings that differ are written (a title edited:
    -- the words added or removed; a lexeme's score depends on its weights, not its positions).
    with was as materialized (
      select o.language_code, p.lexeme, o.entry_id, o.content_type_id, o.published_at, o.author_id, p.score
      from old_rows o
      join new_rows n on n.entry_id = o.entry_id and n.language_code = o.language_code
      cross join lateral vitrine_document_postings(o.document) p
      where o.published
        and n.published
        and o.document <> n.document
    ),
    now_kept as materialized (
      select n.language_code, p.lexeme, n.entry_id, n.content_type_id, n.published, n.published_at, n.author_id, p.score
      from new_rows n
      join old_rows o on o.entry_id = n.entry_id and o.language_code = n.language_code
      cross join lateral vitrine_document_postings(n.document) p
      where o.published
        and n.published
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
      set content_type_id = k.content_type_id, published_at = k.published_at, author_id = k.author_id, score = k.score
      from now_kept k
      join was w on w.language_code = k.language_code and w.lexeme = k.lexeme and w.entry_id = k.entry_id
      where p.language_code = k.language_code
        and p.lexeme = k.lexeme
        and p.entry_id = k.entry_id
        -- Compared before the posting is looked up: most postings of an edited text are unchanged.
        and (w.content_type_id, w.published_at, w.author_id, w.score) is distinct from (k.content_type_id, k.published_at, k.author_id, k.score)
    )
    insert into search_postings
    select k.*
    from now_kept k
    where not exists (select 1 from was w where w.language_code = k.language_code and w.lexeme = k.lexeme and w.entry_id = k.entry_id);
  end if;
  return null;
end
$$;

create trigger search_documents_posted_insert after insert on search_documents
  referencing new table as new_rows
  for each statement execute function vitrine_search_documents_posted();
create trigger search_documents_posted_update after update on search_documents
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_search_documents_posted();
create trigger search_documents_posted_delete after delete on search_documents
  referencing old table as old_rows
  for each statement execute function vitrine_search_documents_posted();

-- Where search_postings and search_documents disagree: none when they agree.
create function vitrine_search_posting_drift()
returns table (language_code text, lexeme text, entry_id bigint, kept boolean, computed boolean)
language sql
stable
set search_path from current
as $$
  select coalesce(k.language_code, c.language_code), coalesce(k.lexeme, c.lexeme), coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
  from search_postings k
  full join search_document_postings c on c.language_code = k.language_code and c.lexeme = k.lexeme and c.entry_id = k.entry_id
  where k.entry_id is null
    or c.entry_id is null
    or (k.content_type_id, k.published, k.published_at, k.author_id, k.score)
      is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.score)
$$;

-- The repair of 0008 rebuilds both.
create or replace function vitrine_repair_search_documents() returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  lock table entries in share row exclusive mode;
  lock table entry_translations in share row exclusive mode;
  alter table search_documents disable trigger search_documents_posted_delete;
  alter table search_documents disable trigger search_documents_posted_insert;
  delete from search_documents;
  insert into search_documents
  select *
  from search_document_rows;
  alter table search_documents enable trigger search_documents_posted_delete;
  alter table search_documents enable trigger search_documents_posted_insert;
  delete from search_postings;
  insert into search_postings
  select *
  from search_document_postings;
end
$$;
