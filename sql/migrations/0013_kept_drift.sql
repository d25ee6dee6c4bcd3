-- Drift of every kept structure, found and reported by one function (contract C56). The design:
-- sql/any-writer.md ("Drift").
--
-- What these tell: where a structure kept beside the data model disagrees with a fresh computation
-- from the base tables at this moment; nothing when they agree. For whom: the service checks them on
-- a timer (`vitrine_kept_drift`, a slice of entries at a time for the structures kept per entry, so
-- that a check costs about the same at any size) and reports `vitrine_kept_drift{structure}`; `bun
-- run repair` and the tests compare them with nothing.

-- Guards (0010) whose state is not their entry's, entries with rows of their own and no guard, and
-- guards of entries that are gone, for the entries first_entry..last_entry (null: no bound).
create function vitrine_entry_guard_drift(first_entry bigint default null, last_entry bigint default null)
returns table (entry_id bigint, kept boolean, computed boolean)
language sql
stable
set search_path from current
as $$
  with kept as (
    select g.entry_id, g.content_type_id, g.published, g.published_at, g.author_id
    from entry_guards g
    where g.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  ),
  computed as (
    select e.id as entry_id, e.content_type_id, e.status = 'published' as published, e.published_at, e.author_id,
      exists (select 1 from entry_translations t where t.entry_id = e.id)
        or exists (select 1 from entry_terms t where t.entry_id = e.id)
        or exists (select 1 from field_values f where f.entry_id = e.id) as needed
    from entries e
    where e.id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  )
  select coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
  from kept k
  full join computed c on c.entry_id = k.entry_id
  where (k.entry_id is null and c.needed)
    or (c.entry_id is null and k.entry_id is not null)
    or (k.entry_id is not null and c.entry_id is not null
      and (k.content_type_id, k.published, k.published_at, k.author_id) is distinct from (c.content_type_id, c.published, c.published_at, c.author_id))
$$;

-- The documents (0011) of the entries first_entry..last_entry: missing, extra or different.
create function vitrine_search_document_drift(first_entry bigint default null, last_entry bigint default null)
returns table (entry_id bigint, language_code text, kept boolean, computed boolean)
language sql
stable
set search_path from current
as $$
  with kept as (
    select s.entry_id, s.language_code, s.document
    from search_documents s
    where s.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  ),
  computed as (
    select r.entry_id, r.language_code, r.document
    from search_document_rows r
    where r.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  )
  select coalesce(k.entry_id, c.entry_id), coalesce(k.language_code, c.language_code), k.entry_id is not null, c.entry_id is not null
  from kept k
  full join computed c on c.entry_id = k.entry_id and c.language_code = k.language_code
  where k.entry_id is null
    or c.entry_id is null
    or k.document is distinct from c.document
$$;

-- The postings of the entries first_entry..last_entry, from their documents and guards (taken as
-- right). With bounds, read through the primary key: the postings each document should have, and
-- the postings of each document's own lexemes that it should not have (a draft's, a long
-- document's). A posting of a lexeme its document no longer has is found without bounds only (that
-- reads every posting).
create function vitrine_search_posting_drift(first_entry bigint default null, last_entry bigint default null)
returns table (language_code text, lexeme text, entry_id bigint, kept boolean, computed boolean)
language plpgsql
stable
set search_path from current
as $$
begin
  if first_entry is null and last_entry is null then
    return query
    select coalesce(k.language_code, c.language_code), coalesce(k.lexeme, c.lexeme)::text, coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
    from search_postings k
    full join search_document_postings c on c.language_code = k.language_code and c.lexeme = k.lexeme and c.entry_id = k.entry_id
    where k.entry_id is null
      or c.entry_id is null
      or (k.content_type_id, k.published, k.published_at, k.author_id, k.score)
        is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.score);
    return;
  end if;
  return query
  with computed as materialized (
    select c.*
    from search_document_postings c
    where c.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  ),
  kept as materialized (
    select k.*
    from search_documents d
    cross join lateral unnest(d.document) u
    join search_postings k on k.language_code = d.language_code and k.lexeme = u.lexeme and k.entry_id = d.entry_id
    where d.entry_id between coalesce(first_entry, -9223372036854775808) and coalesce(last_entry, 9223372036854775807)
  )
  select coalesce(k.language_code, c.language_code), coalesce(k.lexeme, c.lexeme)::text, coalesce(k.entry_id, c.entry_id), k.entry_id is not null, c.entry_id is not null
  from kept k
  full join computed c on c.language_code = k.language_code and c.lexeme = k.lexeme and c.entry_id = k.entry_id
  where k.entry_id is null
    or c.entry_id is null
    or (k.content_type_id, k.published, k.published_at, k.author_id, k.score)
      is distinct from (c.content_type_id, c.published, c.published_at, c.author_id, c.score);
end
$$;

-- Terms (0007) not dirty whose rows in term_list_carried say otherwise than the kept filter counts
-- about which content types (0: any) carry them now.
create function vitrine_term_list_drift()
returns table (term_id bigint, content_type_id bigint, kept boolean, computed boolean)
language sql
stable
set search_path from current
as $$
  with kept as (
    select c.term_id, c.content_type_id
    from term_list_carried c
    where c.carried_from <= now()
      and not exists (select 1 from term_list_dirty d where d.term_id = c.term_id)
  ),
  computed as (
    select r.term_id, r.content_type_id
    from vitrine_term_list_rows(array(select t.id from terms t where not exists (select 1 from term_list_dirty d where d.term_id = t.id))) r
    where r.carried_from <= now()
  )
  select coalesce(k.term_id, c.term_id), coalesce(k.content_type_id, c.content_type_id), k.term_id is not null, c.term_id is not null
  from kept k
  full join computed c on c.term_id = k.term_id and c.content_type_id = k.content_type_id
  where k.term_id is null
    or c.term_id is null
$$;

-- The service's triggers whose state is not what keeps the structures right: disabled (`alter table
-- … disable trigger`), or enabled for the wrong writers (`enable trigger all` after a bulk load makes
-- every trigger fire for ordinary writers only: the replica row triggers then do nothing, 0012, and
-- the triggers of the service's own tables and TRUNCATE no longer fire for the apply worker).
-- `expected`: O (ordinary writers), R (replicas only), A (always).
create function vitrine_trigger_drift()
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
      when c.relname in ('search_documents', 'live_filter_count_deltas') then 'A'
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

-- Puts every trigger of vitrine_trigger_drift() back in the state it expects.
create function vitrine_repair_triggers() returns void
language plpgsql
set search_path from current
as $$
declare
  found record;
begin
  for found in select * from vitrine_trigger_drift() loop
    execute format('alter table %I enable %s trigger %I', found.table_name, case found.expected when 'R' then 'replica' when 'A' then 'always' else '' end, found.trigger_name);
  end loop;
end
$$;

revoke execute on function vitrine_repair_triggers() from public;

-- Every kept structure's drift, as the service reports it: one row per structure with the number of
-- rows that disagree (0 when it agrees). The structures kept per entry (guards, search documents and
-- postings) are checked for the entries first_entry..last_entry (null: every entry); the counts and
-- the term lists always whole.
create function vitrine_kept_drift(first_entry bigint default null, last_entry bigint default null)
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
$$;

-- Makes the rows kept per entry (guards, search documents and postings) of the entries
-- first_entry..last_entry exact again; returns the number of entries it found drifted. Run a slice at a
-- time by `bun run repair`, each in a transaction of its own:
-- 1. every guard of the slice is updated first, in id order: writers of those entries wait for this
--    slice (not for the whole repair), and a repeatable read writer racing it is refused;
-- 2. the entries that drifted are found (each later statement reads a snapshot taken after step 1,
--    so it sees what the writers that held those guards committed);
-- 3. the guards take their entries' state; then, for the drifted entries only, the postings of their
--    documents as kept and as they should be go, the documents are rewritten (their triggers add the
--    postings that changed), and the postings that are still missing come.
create function vitrine_repair_entries(first_entry bigint, last_entry bigint) returns bigint
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
  return cardinality(drifted);
end
$$;

revoke execute on function vitrine_repair_entries(bigint, bigint) from public;

-- Postings whose document is gone, no longer posted, or of an entry no longer published: what a slice
-- of the repair cannot reach through documents. Reads every posting (minutes at a million entries).
create function vitrine_repair_orphan_postings() returns bigint
language plpgsql
security definer
set search_path from current
as $$
declare
  n bigint;
begin
  delete from search_postings p
  where not exists (
    select 1
    from search_documents d
    join entry_guards g on g.entry_id = d.entry_id
    where d.entry_id = p.entry_id
      and d.language_code = p.language_code
      and d.posted
      and g.published
  );
  get diagnostics n = row_count;
  return n;
end
$$;

revoke execute on function vitrine_repair_orphan_postings() from public;
