-- 0016: what a search box's three first letters find, kept per entry (C55, C43; sql/search-structure.md).
--
-- A search of one bare word of three letters (`bif`) matches, through search_postings, every lexeme
-- that begins with them: 79 000 postings of 60 000 entries at a million short entries, grouped by
-- entry at every search to sum each entry's scores (its rank) and to count the entries (C43's total).
-- search_prefixes keeps that grouping: one row per (language, first three letters, entry) of the
-- postings, with the sum of their scores and, when the entry has the three-letter lexeme itself, its
-- score (C55: exact words rank first). A search then reads one index range, as a word does.
--
-- It follows search_postings alone, through statement triggers on it (enabled always: the apply
-- worker of logical replication writes postings through the replica triggers of 0012): whoever
-- writes postings (the documents' triggers, the entries' guard trigger, a repair) moves the sums.
-- A posting's score is a sum of float4 weights (0.1 to 1.0) in float8, so a sum of scores is exact
-- in float8 at any size a document of 128 lexemes reaches, in any order: adding and subtracting a
-- statement's postings keeps it equal to the sum the postings give.

-- Writers of postings wait for this migration: a posting written while the rows are copied would
-- reach no prefix.
lock table search_postings in share mode;

create table search_prefixes (
  language_code text not null,
  prefix text collate "C" not null,
  entry_id bigint not null,
  content_type_id bigint not null,
  published boolean not null,
  published_at timestamptz,
  author_id bigint,
  score float8 not null,
  exact float8,
  lexemes integer not null
);

alter table search_prefixes set (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);

-- Computed from the postings: what the triggers keep, what the drift check compares with.
create view search_posting_prefixes as
  select p.language_code, left(p.lexeme, 3) collate "C" as prefix, p.entry_id,
    max(p.content_type_id) as content_type_id, bool_and(p.published) as published, max(p.published_at) as published_at,
    max(p.author_id) as author_id, sum(p.score) as score,
    max(p.score) filter (where length(p.lexeme) = 3) as exact, count(*)::integer as lexemes
  from search_postings p
  where length(p.lexeme) >= 3
  group by p.language_code, left(p.lexeme, 3), p.entry_id;

insert into search_prefixes
select *
from search_posting_prefixes;

alter table search_prefixes add primary key (language_code, prefix, entry_id) include (content_type_id, published, published_at, author_id, score, exact);

-- search_postings, per statement: the sums of the prefixes its rows touched move by their scores.
-- Our triggers never change a posting's key: an update's old and new rows pair by it (a lexeme or
-- entry changed by hand moves no sum: the drift check finds it, the repair rewrites it).
create type search_prefix_key as (language_code text, prefix text collate "C", entry_id bigint);

create function vitrine_search_postings_prefixed() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  emptied_keys search_prefix_key[];
begin
  -- A statement that wrote no posting (an article's: long documents have none) does nothing here.
  if tg_op = 'INSERT' then
    if not exists (select 1 from new_rows) then
      return null;
    end if;
  elsif not exists (select 1 from old_rows) then
    return null;
  end if;
  if tg_op = 'INSERT' then
    insert into search_prefixes as k
    select n.language_code, left(n.lexeme, 3), n.entry_id, max(n.content_type_id), bool_and(n.published), max(n.published_at),
      max(n.author_id), sum(n.score), max(n.score) filter (where length(n.lexeme) = 3), count(*)
    from new_rows n
    where length(n.lexeme) >= 3
    group by n.language_code, left(n.lexeme, 3), n.entry_id
    order by 1, 2, 3
    on conflict (language_code, prefix, entry_id) do update
    set content_type_id = excluded.content_type_id,
      published = excluded.published,
      published_at = excluded.published_at,
      author_id = excluded.author_id,
      score = k.score + excluded.score,
      exact = coalesce(excluded.exact, k.exact),
      lexemes = k.lexemes + excluded.lexemes;
  elsif tg_op = 'DELETE' then
    -- Subtracted first, each row as it is when locked (a writer that takes no guard, such as the
    -- sweep of orphan postings, may have moved it since this statement's snapshot); then the rows
    -- left with no posting go.
    with gone as (
      select o.language_code, left(o.lexeme, 3) as prefix, o.entry_id, sum(o.score) as score,
        bool_or(length(o.lexeme) = 3) as exact, count(*) as lexemes
      from old_rows o
      where length(o.lexeme) >= 3
      group by o.language_code, left(o.lexeme, 3), o.entry_id
    ),
    emptied as (
      update search_prefixes k
      set score = k.score - g.score,
        exact = case when g.exact then null else k.exact end,
        lexemes = k.lexemes - g.lexemes
      from gone g
      where k.language_code = g.language_code
        and k.prefix = g.prefix
        and k.entry_id = g.entry_id
      returning k.language_code, k.prefix, k.entry_id, k.lexemes
    )
    select coalesce(array_agg(row(e.language_code, e.prefix, e.entry_id)::search_prefix_key), '{}') into emptied_keys
    from emptied e
    where e.lexemes <= 0;
    if cardinality(emptied_keys) > 0 then
      delete from search_prefixes k
      using unnest(emptied_keys) e
      where k.language_code = e.language_code
        and k.prefix = e.prefix
        and k.entry_id = e.entry_id;
    end if;
  else
    update search_prefixes k
    set content_type_id = c.content_type_id,
      published = c.published,
      published_at = c.published_at,
      author_id = c.author_id,
      score = k.score + c.score,
      exact = coalesce(c.exact, k.exact)
    from (
      select n.language_code, left(n.lexeme, 3) as prefix, n.entry_id, max(n.content_type_id) as content_type_id,
        bool_and(n.published) as published, max(n.published_at) as published_at, max(n.author_id) as author_id,
        sum(n.score - o.score) as score, max(n.score) filter (where length(n.lexeme) = 3) as exact
      from new_rows n
      join old_rows o on o.language_code = n.language_code and o.lexeme = n.lexeme and o.entry_id = n.entry_id
      where length(n.lexeme) >= 3
      group by n.language_code, left(n.lexeme, 3), n.entry_id
    ) c
    where k.language_code = c.language_code
      and k.prefix = c.prefix
      and k.entry_id = c.entry_id;
  end if;
  return null;
end
$$;

create trigger search_postings_prefixed_insert after insert on search_postings
  referencing new table as new_rows
  for each statement execute function vitrine_search_postings_prefixed();
create trigger search_postings_prefixed_update after update on search_postings
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_search_postings_prefixed();
create trigger search_postings_prefixed_delete after delete on search_postings
  referencing old table as old_rows
  for each statement execute function vitrine_search_postings_prefixed();
alter table search_postings enable always trigger search_postings_prefixed_insert;
alter table search_postings enable always trigger search_postings_prefixed_update;
alter table search_postings enable always trigger search_postings_prefixed_delete;

-- TRUNCATE of search_postings, whoever runs it: the prefixes go with it.
create function vitrine_search_postings_truncated_prefixed() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  truncate search_prefixes;
  return null;
end
$$;

create trigger search_postings_prefixed_truncate after truncate on search_postings
  for each statement execute function vitrine_search_postings_truncated_prefixed();
alter table search_postings enable always trigger search_postings_prefixed_truncate;

-- Prefix rows that differ from their postings grouped, over every posting (minutes at a million
-- entries): what a slice of the repair cannot reach, a row whose postings are all gone. Rows are
-- made again from the postings; returns the rows removed (wrong or extra) plus those made (right
-- or missing). Writers of postings wait for it.
create function vitrine_repair_search_prefixes() returns bigint
language plpgsql
security definer
set search_path from current
as $$
declare
  removed bigint;
  added bigint;
begin
  lock table search_postings in share mode;
  delete from search_prefixes k
  where not exists (
    select 1
    from search_posting_prefixes c
    where c.language_code = k.language_code
      and c.prefix = k.prefix
      and c.entry_id = k.entry_id
      and (c.content_type_id, c.published, c.published_at, c.author_id, c.score, c.exact, c.lexemes)
        is not distinct from (k.content_type_id, k.published, k.published_at, k.author_id, k.score, k.exact, k.lexemes)
  );
  get diagnostics removed = row_count;
  insert into search_prefixes
  select c.*
  from search_posting_prefixes c
  where not exists (select 1 from search_prefixes k where k.language_code = c.language_code and k.prefix = c.prefix and k.entry_id = c.entry_id);
  get diagnostics added = row_count;
  return removed + added;
end
$$;

revoke execute on function vitrine_repair_search_prefixes() from public;

-- Drift (0013): the prefixes of the entries first_entry..last_entry missing, extra or different
-- from their postings (taken as right: vitrine_search_posting_drift checks those). With bounds,
-- read through the primary key: the prefixes of the lexemes of each entry's documents.
create function vitrine_search_prefix_drift(first_entry bigint default null, last_entry bigint default null)
returns table (language_code text, prefix text, entry_id bigint, kept boolean, computed boolean)
language plpgsql
stable
set search_path from current
as $$
begin
  if first_entry is null and last_entry is null then
    return query
    select coalesce(k.language_code, c.language_code), coalesce(k.prefix, c.prefix)::text, coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
    from search_prefixes k
    full join search_posting_prefixes c on c.language_code = k.language_code and c.prefix = k.prefix and c.entry_id = k.entry_id
    where k.entry_id is null
      or c.entry_id is null
      or (k.content_type_id, k.published, k.published_at, k.author_id, k.score, k.exact, k.lexemes)
        is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.score, c.exact, c.lexemes);
    return;
  end if;
  return query
  with prefixes as materialized (
    select distinct d.language_code, left(u.lexeme, 3) collate "C" as prefix, d.entry_id
    from search_documents d
    cross join lateral unnest(d.document) u
    where d.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
      and length(u.lexeme) >= 3
  ),
  computed as materialized (
    select d.language_code, left(p.lexeme, 3) collate "C" as prefix, d.entry_id, max(p.content_type_id) as content_type_id,
      bool_and(p.published) as published, max(p.published_at) as published_at, max(p.author_id) as author_id,
      sum(p.score) as score, max(p.score) filter (where length(p.lexeme) = 3) as exact, count(*)::integer as lexemes
    from search_documents d
    cross join lateral unnest(d.document) u
    join search_postings p on p.language_code = d.language_code and p.lexeme = u.lexeme and p.entry_id = d.entry_id
    where d.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
      and length(u.lexeme) >= 3
    group by d.language_code, left(p.lexeme, 3), d.entry_id
  ),
  kept as materialized (
    select k.*
    from prefixes x
    join search_prefixes k on k.language_code = x.language_code and k.prefix = x.prefix and k.entry_id = x.entry_id
  )
  select coalesce(k.language_code, c.language_code), coalesce(k.prefix, c.prefix)::text, coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
  from kept k
  full join computed c on c.language_code = k.language_code and c.prefix = k.prefix and c.entry_id = k.entry_id
  where k.entry_id is null
    or c.entry_id is null
    or (k.content_type_id, k.published, k.published_at, k.author_id, k.score, k.exact, k.lexemes)
      is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.score, c.exact, c.lexemes);
end
$$;


-- Triggers expected enabled always: search_postings' too (the apply worker writes postings).
create or replace function vitrine_trigger_drift()
returns table (table_name text, trigger_name text, enabled text, expected text)
language sql
stable
set search_path from current
as $$
  select c.relname::text, t.tgname::text, t.tgenabled::text, x.expected
  from pg_trigger t
  join pg_class c on c.oid = t.tgrelid
  cross join lateral (
    select case
      when t.tgname = 'vitrine_replicated' then 'R'
      when c.relname in ('search_documents', 'search_postings', 'live_filter_count_deltas') then 'A'
      -- TRUNCATE is bit 5 of tgtype.
      when t.tgtype & 32 <> 0 then 'A'
      else 'O'
    end as expected
  ) x
  where not t.tgisinternal
    and c.relnamespace = (select oid from pg_namespace where nspname = current_schema())
    and t.tgfoid in (select p.oid from pg_proc p where p.proname like 'vitrine\_%')
    and t.tgenabled::text <> x.expected
$$;

-- The kept drift, the prefixes included.
create or replace function vitrine_kept_drift(first_entry bigint default null, last_entry bigint default null)
returns table (structure text, drifted bigint)
language sql
stable
set search_path from current
as $$
  select 'triggers', count(*) from vitrine_trigger_drift()
  union all
  select 'live_entry_counts', count(*) from vitrine_live_entry_count_drift()
  union all
  select 'filter_counts', count(*) from vitrine_live_filter_count_drift()
  union all
  select 'term_lists', count(*) from vitrine_term_list_drift()
  union all
  select 'entry_guards', count(*) from vitrine_entry_guard_drift(first_entry, last_entry)
  union all
  select 'search_documents', count(*) from vitrine_search_document_drift(first_entry, last_entry)
  union all
  select 'search_postings', count(*) from vitrine_search_posting_drift(first_entry, last_entry)
  union all
  select 'search_prefixes', count(*) from vitrine_search_prefix_drift(first_entry, last_entry)
$$;

-- The repair of a slice (0013), the prefixes included.
create or replace function vitrine_repair_entries(first_entry bigint, last_entry bigint) returns bigint
language plpgsql
security definer
set search_path from current
as $$
declare
  drifted bigint[];
begin
  perform 1
  from entry_guards g
  where g.entry_id between first_entry and last_entry
  order by g.entry_id
  for update;
  update entry_guards g
  set writes = g.writes + 1
  where g.entry_id between first_entry and last_entry;
  select array_agg(distinct d.entry_id) into drifted
  from (
    select entry_id from vitrine_entry_guard_drift(first_entry, last_entry)
    union all
    select entry_id from vitrine_search_document_drift(first_entry, last_entry)
    union all
    select entry_id from vitrine_search_posting_drift(first_entry, last_entry)
    union all
    select entry_id from vitrine_search_prefix_drift(first_entry, last_entry)
  ) d;
  if drifted is null then
    return 0;
  end if;
  -- The guards: missing ones made, each with its entry's state, those of entries gone deleted.
  insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
  select e.id, e.content_type_id, e.status = 'published', e.published_at, e.author_id
  from entries e
  where e.id = any (drifted)
  order by e.id
  on conflict (entry_id) do nothing;
  update entry_guards g
  set content_type_id = e.content_type_id, published = e.status = 'published', published_at = e.published_at, author_id = e.author_id
  from entries e
  where g.entry_id = e.id
    and g.entry_id = any (drifted)
    and (g.content_type_id, g.published, g.published_at, g.author_id) is distinct from (e.content_type_id, e.status = 'published', e.published_at, e.author_id);
  delete from entry_guards g
  where g.entry_id = any (drifted)
    and not exists (select 1 from entries e where e.id = g.entry_id);
  -- Their postings, by the lexemes of their documents as kept and as they should be.
  delete from search_postings p
  using (
    select d.entry_id, d.language_code, u.lexeme
    from search_documents d
    cross join lateral unnest(d.document) u
    where d.entry_id = any (drifted)
    union
    select r.entry_id, r.language_code, u.lexeme
    from search_document_rows r
    cross join lateral unnest(r.document) u
    where r.entry_id = any (drifted)
  ) w
  where p.language_code = w.language_code
    and p.lexeme = w.lexeme
    and p.entry_id = w.entry_id;
  -- Their documents.
  delete from search_documents s
  where s.entry_id = any (drifted)
    and not exists (select 1 from entry_translations t where t.entry_id = s.entry_id and t.language_code = s.language_code);
  update search_documents s
  set document = r.document
  from search_document_rows r
  where r.entry_id = s.entry_id
    and r.language_code = s.language_code
    and s.entry_id = any (drifted)
    and s.document is distinct from r.document;
  insert into search_documents (entry_id, language_code, document)
  select r.entry_id, r.language_code, r.document
  from search_document_rows r
  where r.entry_id = any (drifted)
    and not exists (select 1 from search_documents s where s.entry_id = r.entry_id and s.language_code = r.language_code);
  -- The postings still missing (a document's trigger adds only the words it changed).
  insert into search_postings
  select c.*
  from search_document_postings c
  where c.entry_id = any (drifted)
    and not exists (select 1 from search_postings p where p.language_code = c.language_code and p.lexeme = c.lexeme and p.entry_id = c.entry_id);
  -- Their prefixes, made again from their postings (the postings' triggers moved them by what
  -- changed; a prefix that had drifted on its own is rewritten here).
  delete from search_prefixes k
  using (
    select distinct d.language_code, left(u.lexeme, 3) collate "C" as prefix, d.entry_id
    from search_documents d
    cross join lateral unnest(d.document) u
    where d.entry_id = any (drifted)
      and length(u.lexeme) >= 3
  ) w
  where k.language_code = w.language_code
    and k.prefix = w.prefix
    and k.entry_id = w.entry_id;
  insert into search_prefixes
  select d.language_code, left(p.lexeme, 3), d.entry_id, max(p.content_type_id), bool_and(p.published), max(p.published_at),
    max(p.author_id), sum(p.score), max(p.score) filter (where length(p.lexeme) = 3), count(*)
  from search_documents d
  cross join lateral unnest(d.document) u
  join search_postings p on p.language_code = d.language_code and p.lexeme = u.lexeme and p.entry_id = d.entry_id
  where d.entry_id = any (drifted)
    and length(u.lexeme) >= 3
  group by d.language_code, left(p.lexeme, 3), d.entry_id;
  return cardinality(drifted);
end
$$;
