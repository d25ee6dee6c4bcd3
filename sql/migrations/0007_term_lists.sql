-- Term lists at the cost of a page (contract C46): which terms live entries carry, kept per term.
-- The design, why writers still never wait for each other, and its failure modes:
-- sql/live-entry-counts.md ("Term lists").
--
-- What these keep true: in every snapshot, for every term that has no row in term_list_dirty, its
-- rows in term_list_carried say from when live entries carry it (per content type, and of any
-- type), as the kept filter counts of 0004 say: the term is carried at time T when the sum of its
-- rows of live_filter_count_deltas live at T is positive. A term whose counts moved since is in
-- term_list_dirty, and readers count it from live_filter_count_deltas themselves.
-- For whom: a term list reads its page from term_list_carried's index in name order and stops when
-- the page is full, and its meta.total from the same range, instead of summing the kept rows of
-- every term of the taxonomy.
--
-- Why a time and not a flag: without a write, the live entries of a term only grow (an entry's
-- rows net to +1 at its published_at while it is published), so a term, once carried, stays
-- carried until a write; a term that only embargoed entries carry starts to be carried at the
-- first one's go-live, with no write: carried_from is that second, and readers compare it with now().

create table term_list_carried (
  term_id bigint not null,
  taxonomy_id bigint not null,
  -- The content type the entries are of; 0: any type (a list without `type`).
  content_type_id bigint not null,
  -- The term's name, for the order of a term list (C46: name, then id). A term renamed is dirty.
  name text not null,
  -- From when live entries carry it: '-infinity' when they already did at the last write.
  carried_from timestamptz not null,
  primary key (term_id, content_type_id)
);

-- A term list: its page in order from the start of the range, and its meta.total, from the index alone.
create index term_list_carried_order
  on term_list_carried (taxonomy_id, content_type_id, name, term_id) include (carried_from);

-- Terms whose kept filter counts moved and whose row above is not yet rewritten. Writers only
-- insert here; the one compaction at a time deletes what it rewrote.
create table term_list_dirty (
  term_id bigint not null
);

-- The rows of term_list_carried for the given terms: one per content type whose live entries carry
-- each (now or from an embargoed entry's go-live), and one for any type (the earliest of them), as
-- the kept filter counts say at this moment. carried_from: '-infinity' when the term was carried a
-- second ago (a reader's now() is at most that much before the snapshot that sees this write: as
-- vitrine_fold_live_entry_counts), else the first publication time at which the running sum of its
-- later rows is positive; no row when never before a write. A term that no longer exists has none.
-- One statement for all the terms (a function per term and type was planned at every call).
create function vitrine_term_list_rows(term_ids bigint[])
returns table (term_id bigint, taxonomy_id bigint, content_type_id bigint, name text, carried_from timestamptz)
language sql
stable
set search_path from current
as $$
  with settled as (
    select t.id as term_id, t.taxonomy_id, t.name, ct.id as content_type_id, (
      select coalesce(sum(d.delta), 0)
      from live_filter_count_deltas d
      where d.kind = 'term'
        and d.key = t.id
        and d.content_type_id = ct.id
        and d.live_from <= now() - interval '1 second'
    ) + (
      select coalesce(sum(d.delta), 0)
      from live_filter_count_deltas d
      where d.kind = 'term'
        and d.key = t.id
        and d.content_type_id = ct.id
        and d.live_from is null
    ) as live
    from terms t
    cross join content_types ct
    where t.id = any(term_ids)
  ),
  per_type as (
    select s.term_id, s.taxonomy_id, s.name, s.content_type_id,
      case
        when s.live > 0 then '-infinity'::timestamptz
        else (
          select min(r.live_from)
          from (
            select d.live_from, s.live + sum(d.delta) over (order by d.live_from) as live
            from live_filter_count_deltas d
            where d.kind = 'term'
              and d.key = s.term_id
              and d.content_type_id = s.content_type_id
              and d.live_from > now() - interval '1 second'
          ) r
          where r.live > 0
        )
      end as carried_from
    from settled s
  )
  select p.term_id, p.taxonomy_id, p.content_type_id, p.name, p.carried_from
  from per_type p
  where p.carried_from is not null
  union all
  select p.term_id, p.taxonomy_id, 0, p.name, min(p.carried_from)
  from per_type p
  group by p.term_id, p.taxonomy_id, p.name
  having min(p.carried_from) is not null
$$;

-- Rewrites the rows of the dirty terms and empties term_list_dirty of them. One compaction at a
-- time (try-lock, no waiting: a writer that cannot take it leaves its terms dirty for the next),
-- and only in read committed transactions (as the folds: deleting rows that another compaction
-- deleted would be a serialization failure for the writer). The dirty terms are taken in one
-- snapshot; the rows are computed in a later one, which sees every write the first saw: a write
-- that committed in between left its own dirty rows, which stay for the next compaction.
create function vitrine_compact_term_lists() returns void
language plpgsql
security definer
set search_path from current
as $$
declare
  taken bigint[];
begin
  if current_setting('transaction_isolation') <> 'read committed'
    or not pg_try_advisory_xact_lock(hashtext('vitrine_compact_term_lists')) then
    return;
  end if;
  with picked as (
    delete from term_list_dirty
    returning term_id
  )
  select array_agg(distinct term_id) into taken from picked;
  if taken is null then
    return;
  end if;
  -- Only the rows that changed are written: most writes leave a term carried as it was.
  with fresh as materialized (
    select *
    from vitrine_term_list_rows(taken)
  ),
  gone as (
    delete from term_list_carried c
    where c.term_id = any(taken)
      and not exists (
        select 1
        from fresh f
        where f.term_id = c.term_id
          and f.content_type_id = c.content_type_id
      )
  )
  insert into term_list_carried (term_id, taxonomy_id, content_type_id, name, carried_from)
  select f.term_id, f.taxonomy_id, f.content_type_id, f.name, f.carried_from
  from fresh f
  on conflict (term_id, content_type_id) do update
  set taxonomy_id = excluded.taxonomy_id, name = excluded.name, carried_from = excluded.carried_from
  where (term_list_carried.taxonomy_id, term_list_carried.name, term_list_carried.carried_from)
    is distinct from (excluded.taxonomy_id, excluded.name, excluded.carried_from);
end
$$;

-- Every statement that writes term rows of live_filter_count_deltas (the triggers of 0004, their
-- folds, a repair) marks those terms dirty. Written by a trigger of entries or entry_terms
-- (depth > 1), the compaction runs once at the end of that statement (below). Written directly
-- (vitrine_repair_live_entry_counts, depth 1), every term with rows here is marked too, and the
-- compaction runs now: a repair rebuilds these rows with the counts.
create function vitrine_term_lists_touched() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if tg_op = 'INSERT' then
    insert into term_list_dirty (term_id)
    select distinct n.key
    from new_rows n
    where n.kind = 'term';
  else
    insert into term_list_dirty (term_id)
    select distinct o.key
    from old_rows o
    where o.kind = 'term';
  end if;
  if pg_trigger_depth() = 1 then
    insert into term_list_dirty (term_id)
    select distinct c.term_id
    from term_list_carried c;
    perform vitrine_compact_term_lists();
  end if;
  return null;
end
$$;

-- A term renamed or moved to another taxonomy is dirty: its rows hold its name and taxonomy.
create function vitrine_terms_relisted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  insert into term_list_dirty (term_id)
  select n.id
  from new_rows n
  join old_rows o on o.id = n.id
  where (n.taxonomy_id, n.name) is distinct from (o.taxonomy_id, o.name);
  perform vitrine_compact_term_lists();
  return null;
end
$$;

create function vitrine_term_lists_compacted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  perform vitrine_compact_term_lists();
  return null;
end
$$;

create trigger term_lists_touched_insert after insert on live_filter_count_deltas
  referencing new table as new_rows
  for each statement execute function vitrine_term_lists_touched();
create trigger term_lists_touched_delete after delete on live_filter_count_deltas
  referencing old table as old_rows
  for each statement execute function vitrine_term_lists_touched();
create trigger terms_relisted after update on terms
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_terms_relisted();
-- Named to run after the triggers of 0004 on the same events (triggers run in name order).
create trigger entries_term_lists_compacted after insert or update or delete or truncate on entries
  for each statement execute function vitrine_term_lists_compacted();
create trigger entry_terms_term_lists_compacted after insert or update or delete or truncate on entry_terms
  for each statement execute function vitrine_term_lists_compacted();

revoke execute on function vitrine_compact_term_lists() from public;

insert into term_list_carried (term_id, taxonomy_id, content_type_id, name, carried_from)
select term_id, taxonomy_id, content_type_id, name, carried_from
from vitrine_term_list_rows(array(select id from terms));
