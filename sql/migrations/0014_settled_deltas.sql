-- Count deltas of entries already live are written settled (contract C18, C43, C46; issue: the cost
-- of a bulk unpublish or re-date). The design: sql/live-entry-counts.md ("Settled rows").
--
-- What changes: the rows the triggers of 0003 and 0004 write into live_entry_count_deltas and
-- live_filter_count_deltas take `live_from` = '-infinity' instead of the entry's publication time
-- when that time is at least a second before the writer's now(), as a fold (0003) would have written
-- them. Every reader whose snapshot sees the row has a now() after that second (a reader's now()
-- precedes its snapshot by microseconds): the row counts for it exactly as before. What stays true is
-- what 0003 and 0004 say.
-- For whom: writers of many entries already live. A statement's rows net per (kind, key, type,
-- live_from): unpublishing 1 000 articles with 5 tags each wrote 6 000 rows, one per entry and tag,
-- and now writes one per tag and author; re-dating them within the past nets to nothing.

create function vitrine_live_from(published_at timestamptz) returns timestamptz
language sql
stable
as $$
  select case when published_at <= now() - interval '1 second' then '-infinity'::timestamptz else published_at end
$$;

create or replace function vitrine_entries_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  touched bigint[];
begin
  -- A transition table exists only for the events that have it: one statement per event.
  if tg_op = 'INSERT' then
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, vitrine_live_from(published_at), count(*)
      from new_rows
      where status = 'published'
      group by 1, 2
      returning content_type_id
    )
    select array_agg(distinct content_type_id) into touched from written;
  elsif tg_op = 'DELETE' then
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, vitrine_live_from(published_at), -count(*)
      from old_rows
      where status = 'published'
      group by 1, 2
      returning content_type_id
    )
    select array_agg(distinct content_type_id) into touched from written;
  else
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, live_from, sum(delta)
      from (
        select content_type_id, vitrine_live_from(published_at) as live_from, 1 as delta
        from new_rows
        where status = 'published'
        union all
        select content_type_id, vitrine_live_from(published_at), -1
        from old_rows
        where status = 'published'
      ) changes
      group by content_type_id, live_from
      having sum(delta) <> 0
      returning content_type_id
    )
    select array_agg(distinct content_type_id) into touched from written;
  end if;
  if touched is not null then
    perform vitrine_fold_live_entry_counts(touched);
  end if;
  return null;
end
$$;

-- The statement triggers of 0004 on entries and entry_terms: the same changes, settled.
create or replace function vitrine_entries_filter_counted() returns trigger
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
      select 'author' as kind, n.author_id as key, n.content_type_id, vitrine_live_from(n.published_at) as live_from, 1 as delta
      from new_rows n
      where n.status = 'published' and n.author_id is not null
    $changes$;
  elsif tg_op = 'DELETE' then
    changes := $changes$
      select 'author' as kind, o.author_id as key, o.content_type_id, vitrine_live_from(o.published_at) as live_from, -1 as delta
      from old_rows o
      where o.status = 'published' and o.author_id is not null
    $changes$;
  else
    changes := $changes$
      select 'author' as kind, o.author_id as key, o.content_type_id, vitrine_live_from(o.published_at) as live_from, -1 as delta
      from old_rows o
      where o.status = 'published' and o.author_id is not null
      union all
      select 'author', n.author_id, n.content_type_id, vitrine_live_from(n.published_at), 1
      from new_rows n
      where n.status = 'published' and n.author_id is not null
      union all
      select 'term', et.term_id, o.content_type_id, vitrine_live_from(o.published_at), -1
      from old_rows o
      join new_rows n on n.id = o.id
      join entry_terms et on et.entry_id = o.id
      where o.status = 'published'
        and (o.status, o.published_at, o.content_type_id) is distinct from (n.status, n.published_at, n.content_type_id)
      union all
      select 'term', et.term_id, n.content_type_id, vitrine_live_from(n.published_at), 1
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

-- 0004's row trigger before an entry is deleted counts its terms out. Its rows are locked first (the
-- share lock on the entry that the entry_terms trigger took before 0010 did this): a writer that
-- deletes or moves one of them at the same time and has not committed is waited for, and its row is
-- then skipped (in read committed; a serialization failure in repeatable read), so the term is
-- counted out once, by whichever of the two removed it.
create or replace function vitrine_entry_terms_counted_out() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if old.status = 'published' then
    with carried as (
      select et.term_id
      from entry_terms et
      where et.entry_id = old.id
      for update
    )
    insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
    select 'term', c.term_id, old.content_type_id, vitrine_live_from(old.published_at), -1
    from carried c;
  end if;
  return old;
end
$$;

create or replace function vitrine_entry_terms_filter_counted() returns trigger
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
      select 'term' as kind, n.term_id as key, e.content_type_id, vitrine_live_from(e.published_at) as live_from, 1 as delta
      from new_rows n
      join entries e on e.id = n.entry_id
      where e.status = 'published'
    $changes$;
  elsif tg_op = 'DELETE' then
    changes := $changes$
      select 'term' as kind, o.term_id as key, e.content_type_id, vitrine_live_from(e.published_at) as live_from, -1 as delta
      from old_rows o
      join entries e on e.id = o.entry_id
      where e.status = 'published'
    $changes$;
  else
    changes := $changes$
      select 'term' as kind, o.term_id as key, e.content_type_id, vitrine_live_from(e.published_at) as live_from, -1 as delta
      from old_rows o
      join entries e on e.id = o.entry_id
      where e.status = 'published'
      union all
      select 'term', n.term_id, e.content_type_id, vitrine_live_from(e.published_at), 1
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
