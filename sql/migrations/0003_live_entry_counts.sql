-- Live entry counts for `meta.total` (contract C18) at a cost that does not grow with the site.
-- The design, its failure modes and how drift is found and repaired: sql/live-entry-counts.md.
--
-- What the triggers keep true: for every content type, the sum of `delta` over the rows of
-- `live_entry_count_deltas` whose `live_from` is null or at most now() equals the number of live
-- entries of that type (C1) at that moment, in every snapshot, for every writer (admin panel,
-- import, psql). An entry counts from its publication time: an embargoed entry going live changes
-- the sum with no write, because its +1 was written with `live_from` = its `published_at`.
-- For whom: the service reads the total from here instead of counting every live entry.
--
-- Writers pay one insert per statement into a table nobody updates: they never wait for each
-- other on a counter row and cannot deadlock on one. Now and then a writer folds the rows that
-- are already live into one (see vitrine_fold_live_entry_counts); only one writer does that at a
-- time, and one that cannot take the lock at once simply skips it.

create table live_entry_count_deltas (
  content_type_id bigint not null,
  -- When these entries start to count: their published_at; null for undated entries (live as
  -- soon as published, C1); '-infinity' for folded rows.
  live_from timestamptz,
  delta bigint not null
);

-- The service sums two ranges per type: live_from <= now(), and live_from is null. Rows of
-- embargoed entries (live_from > now()) are never visited.
create index live_entry_count_deltas_range
  on live_entry_count_deltas (content_type_id, live_from) include (delta);

-- Folds, for the given types, the rows that are already live into one row per type and kind
-- (dated, undated), once a type has gathered 64 or more of them. Dated rows fold once live for a
-- second: a reader whose now() was taken just before a fold committed, and whose snapshot just
-- after, still finds the rows between its now() and the fold's on their own. Skipped when another
-- transaction is folding (try-lock, no waiting) and in repeatable read or serializable
-- transactions (their snapshot may miss another fold's rows, and deleting those would be a
-- serialization failure for the writer).
create function vitrine_fold_live_entry_counts(type_ids bigint[]) returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  if current_setting('transaction_isolation') <> 'read committed'
    or not pg_try_advisory_xact_lock(hashtext('vitrine_fold_live_entry_counts')) then
    return;
  end if;
  with crowded as (
    select t.content_type_id
    from unnest(type_ids) t(content_type_id)
    where (
      select count(*)
      from (
        select 1
        from live_entry_count_deltas d
        where d.content_type_id = t.content_type_id
          and d.live_from <= now() - interval '1 second'
        limit 64
      ) dated_rows
    ) + (
      select count(*)
      from (
        select 1
        from live_entry_count_deltas d
        where d.content_type_id = t.content_type_id
          and d.live_from is null
        limit 64
      ) undated_rows
    ) >= 64
  ),
  folded as (
    delete from live_entry_count_deltas d
    where d.content_type_id in (select content_type_id from crowded)
      and (d.live_from <= now() - interval '1 second' or d.live_from is null)
    returning d.content_type_id, d.live_from is null as undated, d.delta
  )
  insert into live_entry_count_deltas (content_type_id, live_from, delta)
  select content_type_id, case when undated then null else '-infinity'::timestamptz end, sum(delta)
  from folded
  group by content_type_id, undated
  having sum(delta) <> 0;
end
$$;

-- One statement's change: +1 per published row written, -1 per published row replaced or
-- deleted, netted per (type, live_from), so that an update of other columns writes nothing.
create function vitrine_entries_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  touched bigint[];
begin
  if tg_op = 'INSERT' then
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, published_at, count(*)
      from new_rows
      where status = 'published'
      group by content_type_id, published_at
      returning content_type_id
    )
    select array_agg(distinct content_type_id) into touched from written;
  elsif tg_op = 'DELETE' then
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, published_at, -count(*)
      from old_rows
      where status = 'published'
      group by content_type_id, published_at
      returning content_type_id
    )
    select array_agg(distinct content_type_id) into touched from written;
  else
    with written as (
      insert into live_entry_count_deltas (content_type_id, live_from, delta)
      select content_type_id, published_at, sum(delta)
      from (
        select content_type_id, published_at, 1 as delta
        from new_rows
        where status = 'published'
        union all
        select content_type_id, published_at, -1
        from old_rows
        where status = 'published'
      ) changes
      group by content_type_id, published_at
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

-- TRUNCATE holds an exclusive lock on entries: no other writer's rows are in flight.
create function vitrine_entries_truncated_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from live_entry_count_deltas;
  return null;
end
$$;

create trigger entries_counted_insert after insert on entries
  referencing new table as new_rows
  for each statement execute function vitrine_entries_counted();
create trigger entries_counted_update after update on entries
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_entries_counted();
create trigger entries_counted_delete after delete on entries
  referencing old table as old_rows
  for each statement execute function vitrine_entries_counted();
create trigger entries_counted_truncate after truncate on entries
  for each statement execute function vitrine_entries_truncated_counted();

-- Where the kept counts and count(*) disagree, at this moment, for the dated and the undated live
-- entries of each type apart (a page by number splits its offset between the two): no row when
-- they agree. The service runs this at start and every LIVE_COUNT_CHECK_SECONDS, and counts by
-- scanning the entries of a type that drifted until this says it agrees again.
create function vitrine_live_entry_count_drift()
returns table (content_type_id bigint, undated boolean, counted bigint, kept bigint)
language sql
stable
set search_path from current
as $$
  with counted as (
    select e.content_type_id, e.published_at is null as undated, count(*) as live
    from entries e
    where e.status = 'published'
      and (e.published_at is null or e.published_at <= now())
    group by e.content_type_id, e.published_at is null
  ),
  kept as (
    select d.content_type_id, d.live_from is null as undated, sum(d.delta)::bigint as live
    from live_entry_count_deltas d
    where d.live_from is null or d.live_from <= now()
    group by d.content_type_id, d.live_from is null
  )
  select coalesce(c.content_type_id, k.content_type_id), coalesce(c.undated, k.undated), coalesce(c.live, 0), coalesce(k.live, 0)
  from counted c
  full join kept k on k.content_type_id = c.content_type_id and k.undated = c.undated
  where coalesce(c.live, 0) <> coalesce(k.live, 0)
$$;

-- Rebuilds the kept counts from the entries: after writes with the triggers disabled (see the
-- design note). Blocks writers of entries, and another repair, for as long as it counts them
-- (share row exclusive conflicts with itself: two repairs at once would double every count).
-- Then every Vitrine drops its cached answers.
create function vitrine_repair_live_entry_counts() returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  lock table entries in share row exclusive mode;
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
  perform vitrine_notify_change('live_entry_count_deltas', null);
end
$$;

-- Security definer functions that write: the owner's only (the trigger functions cannot be
-- called but as triggers). Nobody else may rebuild or fold the counts.
revoke execute on function vitrine_fold_live_entry_counts(bigint[]) from public;
revoke execute on function vitrine_repair_live_entry_counts() from public;

select vitrine_repair_live_entry_counts();
