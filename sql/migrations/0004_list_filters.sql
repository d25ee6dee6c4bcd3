-- Lists filtered by term and author, and full-text search (contract C40–C43).
-- The design, what each filter costs and how the kept counts are checked and repaired:
-- sql/live-entry-counts.md ("Filtered lists").

-- 1. Kept counts per term and per author --------------------------------------------------------
--
-- What the triggers keep true: for every (kind, key, content type), the sum of `delta` over the
-- rows whose `live_from` is null or at most now() equals the number of live entries (C1) of that
-- type that carry that term (kind 'term', key = terms.id) or have that author (kind 'author',
-- key = authors.id), in every snapshot, for every writer. The same scheme as
-- live_entry_count_deltas (0003): an entry counts from its publication time, so a go-live changes
-- the sum with no write. For whom: `meta.total` of a list filtered by one term or by an author
-- (C43: the same cost at 1M entries as at 10k), and the term totals of the discovery routes.

create table live_filter_count_deltas (
  kind text not null check (kind in ('term', 'author')),
  key bigint not null,
  content_type_id bigint not null,
  live_from timestamptz,
  delta bigint not null
);

create index live_filter_count_deltas_range
  on live_filter_count_deltas (kind, key, content_type_id, live_from) include (delta);

-- Folds the live rows of each given (kind, key, type) into one row per kind of date once it has
-- gathered 64 or more: as vitrine_fold_live_entry_counts, whose comments say why each condition.
create function vitrine_fold_live_filter_counts(kinds text[], keys bigint[], type_ids bigint[]) returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  if current_setting('transaction_isolation') <> 'read committed'
    or not pg_try_advisory_xact_lock(hashtext('vitrine_fold_live_filter_counts')) then
    return;
  end if;
  with touched as (
    select distinct t.kind, t.key, t.content_type_id
    from unnest(kinds, keys, type_ids) t(kind, key, content_type_id)
  ),
  crowded as (
    select t.*
    from touched t
    where (
      select count(*)
      from (
        select 1
        from live_filter_count_deltas d
        where d.kind = t.kind
          and d.key = t.key
          and d.content_type_id = t.content_type_id
          and (d.live_from <= now() - interval '1 second' or d.live_from is null)
        limit 64
      ) live_rows
    ) >= 64
  ),
  folded as (
    delete from live_filter_count_deltas d
    using crowded c
    where d.kind = c.kind
      and d.key = c.key
      and d.content_type_id = c.content_type_id
      and (d.live_from <= now() - interval '1 second' or d.live_from is null)
    returning d.kind, d.key, d.content_type_id, d.live_from is null as undated, d.delta
  )
  insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
  select kind, key, content_type_id, case when undated then null else '-infinity'::timestamptz end, sum(delta)
  from folded
  group by kind, key, content_type_id, undated
  having sum(delta) <> 0;
end
$$;

-- The statement that writes netted changes (one row per kind, key, type and publication time)
-- and returns what it touched, for the fold. A trigger runs it with EXECUTE, which sees the
-- trigger's transition tables; `changes` is a query of (kind, key, content_type_id, live_from, delta).
create function vitrine_filter_deltas_statement(changes text) returns text
language sql
immutable
as $$
  select format($statement$
    with written as (
      insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
      select c.kind, c.key, c.content_type_id, c.live_from, sum(c.delta)
      from (%s) c
      group by c.kind, c.key, c.content_type_id, c.live_from
      having sum(c.delta) <> 0
      returning kind, key, content_type_id
    )
    select array_agg(kind), array_agg(key), array_agg(content_type_id)
    from (select distinct kind, key, content_type_id from written) touched
  $statement$, changes)
$$;

-- entries, per statement: an author's counts move with every published row written or removed; a
-- term's counts move when a row that carries it changes status, publication time or type. The
-- terms of deleted rows are counted out before the row goes (vitrine_entry_terms_counted_out):
-- by the end of the statement, the foreign key's cascade has deleted them.
create function vitrine_entries_filter_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  changes text;
  kinds text[];
  keys bigint[];
  type_ids bigint[];
begin
  if tg_op = 'INSERT' then
    changes := $changes$
      select 'author' as kind, n.author_id as key, n.content_type_id, n.published_at as live_from, 1 as delta
      from new_rows n
      where n.status = 'published' and n.author_id is not null
    $changes$;
  elsif tg_op = 'DELETE' then
    changes := $changes$
      select 'author' as kind, o.author_id as key, o.content_type_id, o.published_at as live_from, -1 as delta
      from old_rows o
      where o.status = 'published' and o.author_id is not null
    $changes$;
  else
    changes := $changes$
      select 'author' as kind, o.author_id as key, o.content_type_id, o.published_at as live_from, -1 as delta
      from old_rows o
      where o.status = 'published' and o.author_id is not null
      union all
      select 'author', n.author_id, n.content_type_id, n.published_at, 1
      from new_rows n
      where n.status = 'published' and n.author_id is not null
      union all
      select 'term', et.term_id, o.content_type_id, o.published_at, -1
      from old_rows o
      join new_rows n on n.id = o.id
      join entry_terms et on et.entry_id = o.id
      where o.status = 'published'
        and (o.status, o.published_at, o.content_type_id) is distinct from (n.status, n.published_at, n.content_type_id)
      union all
      select 'term', et.term_id, n.content_type_id, n.published_at, 1
      from new_rows n
      join old_rows o on o.id = n.id
      join entry_terms et on et.entry_id = n.id
      where n.status = 'published'
        and (o.status, o.published_at, o.content_type_id) is distinct from (n.status, n.published_at, n.content_type_id)
    $changes$;
  end if;
  execute vitrine_filter_deltas_statement(changes) into kinds, keys, type_ids;
  if kinds is not null then
    perform vitrine_fold_live_filter_counts(kinds, keys, type_ids);
  end if;
  if tg_op = 'DELETE' then
    -- The rows that vitrine_entry_terms_counted_out wrote for the deleted entries' terms.
    perform vitrine_fold_live_filter_counts(array_agg(d.kind), array_agg(d.key), array_agg(d.content_type_id))
    from (
      select d.kind, d.key, d.content_type_id
      from live_filter_count_deltas d
      where d.kind = 'term'
        and d.content_type_id in (select distinct content_type_id from old_rows)
      group by d.kind, d.key, d.content_type_id
      having count(*) >= 64
    ) d;
  end if;
  return null;
end
$$;

create function vitrine_entry_terms_counted_out() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if old.status = 'published' then
    insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
    select 'term', et.term_id, old.content_type_id, old.published_at, -1
    from entry_terms et
    where et.entry_id = old.id;
  end if;
  return old;
end
$$;

create function vitrine_entries_filter_truncated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from live_filter_count_deltas;
  return null;
end
$$;

-- entry_terms, per statement: +1 per row added to a published entry, -1 per row removed from one.
-- The entries are locked (share) first: a writer that changes an entry's status at the same time
-- either waits for this statement's commit and then sees its rows, or has committed and is seen
-- here; without the lock, each would miss the other's change.
create function vitrine_entry_terms_filter_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  changes text;
  kinds text[];
  keys bigint[];
  type_ids bigint[];
begin
  if tg_op = 'INSERT' then
    perform 1 from entries e where e.id in (select entry_id from new_rows) order by e.id for share of e;
    changes := $changes$
      select 'term' as kind, n.term_id as key, e.content_type_id, e.published_at as live_from, 1 as delta
      from new_rows n
      join entries e on e.id = n.entry_id
      where e.status = 'published'
    $changes$;
  elsif tg_op = 'DELETE' then
    perform 1 from entries e where e.id in (select entry_id from old_rows) order by e.id for share of e;
    changes := $changes$
      select 'term' as kind, o.term_id as key, e.content_type_id, e.published_at as live_from, -1 as delta
      from old_rows o
      join entries e on e.id = o.entry_id
      where e.status = 'published'
    $changes$;
  else
    perform 1 from entries e where e.id in (select entry_id from old_rows union select entry_id from new_rows) order by e.id for share of e;
    changes := $changes$
      select 'term' as kind, o.term_id as key, e.content_type_id, e.published_at as live_from, -1 as delta
      from old_rows o
      join entries e on e.id = o.entry_id
      where e.status = 'published'
      union all
      select 'term', n.term_id, e.content_type_id, e.published_at, 1
      from new_rows n
      join entries e on e.id = n.entry_id
      where e.status = 'published'
    $changes$;
  end if;
  execute vitrine_filter_deltas_statement(changes) into kinds, keys, type_ids;
  if kinds is not null then
    perform vitrine_fold_live_filter_counts(kinds, keys, type_ids);
  end if;
  return null;
end
$$;

create function vitrine_entry_terms_filter_truncated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from live_filter_count_deltas where kind = 'term';
  return null;
end
$$;

create trigger entries_filter_counted_insert after insert on entries
  referencing new table as new_rows
  for each statement execute function vitrine_entries_filter_counted();
create trigger entries_filter_counted_update after update on entries
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_entries_filter_counted();
create trigger entries_filter_counted_delete after delete on entries
  referencing old table as old_rows
  for each statement execute function vitrine_entries_filter_counted();
create trigger entries_filter_counted_truncate after truncate on entries
  for each statement execute function vitrine_entries_filter_truncated();
create trigger entries_terms_counted_out before delete on entries
  for each row execute function vitrine_entry_terms_counted_out();

create trigger entry_terms_filter_counted_insert after insert on entry_terms
  referencing new table as new_rows
  for each statement execute function vitrine_entry_terms_filter_counted();
create trigger entry_terms_filter_counted_update after update on entry_terms
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_entry_terms_filter_counted();
create trigger entry_terms_filter_counted_delete after delete on entry_terms
  referencing old table as old_rows
  for each statement execute function vitrine_entry_terms_filter_counted();
create trigger entry_terms_filter_counted_truncate after truncate on entry_terms
  for each statement execute function vitrine_entry_terms_filter_truncated();

-- Where the kept filter counts and count(*) disagree, now, per (kind, key, type, dated or not):
-- no row when they agree. The service runs it with vitrine_live_entry_count_drift(); a type that
-- drifted has its filtered lists counted one by one until it agrees again.
create function vitrine_live_filter_count_drift()
returns table (kind text, key bigint, content_type_id bigint, undated boolean, counted bigint, kept bigint)
language sql
stable
set search_path from current
as $$
  with live as (
    select e.id, e.content_type_id, e.author_id, e.published_at is null as undated
    from entries e
    where e.status = 'published'
      and (e.published_at is null or e.published_at <= now())
  ),
  counted as (
    select 'author' as kind, l.author_id as key, l.content_type_id, l.undated, count(*) as live
    from live l
    where l.author_id is not null
    group by l.author_id, l.content_type_id, l.undated
    union all
    select 'term', et.term_id, l.content_type_id, l.undated, count(*)
    from live l
    join entry_terms et on et.entry_id = l.id
    group by et.term_id, l.content_type_id, l.undated
  ),
  kept as (
    select d.kind, d.key, d.content_type_id, d.live_from is null as undated, sum(d.delta)::bigint as live
    from live_filter_count_deltas d
    where d.live_from is null or d.live_from <= now()
    group by d.kind, d.key, d.content_type_id, d.live_from is null
  )
  select
    coalesce(c.kind, k.kind), coalesce(c.key, k.key), coalesce(c.content_type_id, k.content_type_id),
    coalesce(c.undated, k.undated), coalesce(c.live, 0), coalesce(k.live, 0)
  from counted c
  full join kept k on k.kind = c.kind and k.key = c.key and k.content_type_id = c.content_type_id and k.undated = c.undated
  where coalesce(c.live, 0) <> coalesce(k.live, 0)
$$;

-- Rebuilds the kept counts, the type totals (0003) and these, from the entries: after writes with
-- the triggers disabled. Blocks writers of entries and entry_terms while it counts.
create or replace function vitrine_repair_live_entry_counts() returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  lock table entries in share row exclusive mode;
  lock table entry_terms in share row exclusive mode;
  delete from live_entry_count_deltas;
  insert into live_entry_count_deltas (content_type_id, live_from, delta)
  select
    e.content_type_id,
    case
      when e.published_at is null then null
      when e.published_at <= now() then '-infinity'::timestamptz
      else e.published_at
    end,
    count(*)
  from entries e
  where e.status = 'published'
  group by 1, 2;
  delete from live_filter_count_deltas;
  insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
  select kind, key, content_type_id, live_from, count(*)
  from (
    select
      'author' as kind,
      e.author_id as key,
      e.content_type_id,
      case
        when e.published_at is null then null
        when e.published_at <= now() then '-infinity'::timestamptz
        else e.published_at
      end as live_from
    from entries e
    where e.status = 'published' and e.author_id is not null
    union all
    select
      'term',
      et.term_id,
      e.content_type_id,
      case
        when e.published_at is null then null
        when e.published_at <= now() then '-infinity'::timestamptz
        else e.published_at
      end
    from entries e
    join entry_terms et on et.entry_id = e.id
    where e.status = 'published'
  ) live
  group by kind, key, content_type_id, live_from;
  perform vitrine_notify_change('live_entry_count_deltas', null);
end
$$;

revoke execute on function vitrine_fold_live_filter_counts(text[], bigint[], bigint[]) from public;
revoke execute on function vitrine_repair_live_entry_counts() from public;

select vitrine_repair_live_entry_counts();

-- 2. The author filter walks one index range, as the unfiltered list does ---------------------

create index entries_author_list
  on entries (content_type_id, author_id, published_at desc nulls last, id desc)
  where status = 'published';

-- A term's entries from the index alone (the foreign key's index on term_id needs the heap for entry_id).
create index entry_terms_term_entry on entry_terms (term_id, entry_id);

-- 3. Full-text search (C42) -------------------------------------------------------------------
--
-- The text search configuration of a language code: `english` for `en` and `en-*`, and so on for
-- every language whose configuration this PostgreSQL ships; `simple` otherwise. Written out at
-- migration time from the configurations present, so that it is immutable (an index depends on it).

do $migration$
declare
  cases text := '';
  known record;
begin
  for known in
    select v.code, v.config
    from (values
      ('ar', 'arabic'), ('hy', 'armenian'), ('eu', 'basque'), ('ca', 'catalan'), ('da', 'danish'),
      ('nl', 'dutch'), ('en', 'english'), ('fi', 'finnish'), ('fr', 'french'), ('de', 'german'),
      ('el', 'greek'), ('hi', 'hindi'), ('hu', 'hungarian'), ('id', 'indonesian'), ('ga', 'irish'),
      ('it', 'italian'), ('lt', 'lithuanian'), ('ne', 'nepali'), ('no', 'norwegian'), ('nb', 'norwegian'),
      ('nn', 'norwegian'), ('pt', 'portuguese'), ('ro', 'romanian'), ('ru', 'russian'), ('sr', 'serbian'),
      ('es', 'spanish'), ('sv', 'swedish'), ('ta', 'tamil'), ('tr', 'turkish'), ('yi', 'yiddish')
    ) v(code, config)
    where exists (
      select 1
      from pg_ts_config c
      join pg_namespace n on n.oid = c.cfgnamespace
      where n.nspname = 'pg_catalog' and c.cfgname = v.config
    )
    order by v.code
  loop
    cases := cases || format(' when %L then %L::regconfig', known.code, 'pg_catalog.' || known.config);
  end loop;
  execute format(
    'create function vitrine_search_config(language_code text) returns regconfig language sql immutable parallel safe as %L',
    format('select case lower(split_part(language_code, %L, 1))%s else %L::regconfig end', '-', cases, 'pg_catalog.simple')
  );
end
$migration$;

-- A translation's searchable text, weighted: title (A) over excerpt (B) over body (C). Kept by
-- PostgreSQL itself (a generated column): writers never fill it.
alter table entry_translations
  add column search_document tsvector generated always as (
    setweight(to_tsvector(vitrine_search_config(language_code), coalesce(title, '')), 'A')
    || setweight(to_tsvector(vitrine_search_config(language_code), coalesce(excerpt, '')), 'B')
    || setweight(to_tsvector(vitrine_search_config(language_code), coalesce(body, '')), 'C')
  ) stored;

create index entry_translations_search on entry_translations using gin (search_document);
