-- 0018: what a bulk status change or re-date of long articles costs beyond the plain write (issue:
-- search that real sites can afford; contract C18, C43, C46, C56). The design:
-- sql/live-entry-counts.md ("What a bulk status change or re-date reads"). Nothing a reader sees
-- changes; the same rows are written.
--
-- 1. The filter counts of entries (0004, 0014): a term's counts move only when its entry's counted
--    state does (published, type, live_from as 0014 writes it). The statement read every changed
--    entry's terms and then compared; it now reads the terms of the entries whose counted state
--    changed: re-dating 1 000 articles within the past reads none of their 5 000 term rows.
-- 2. The term lists (0007): vitrine_term_list_rows sums each term's settled rows in one read
--    instead of two, and is PL/pgSQL so that its plan is kept (a SQL function that cannot be
--    inlined is planned at every call: about half of a compaction's time). The compaction no
--    longer proposes the rows it would not change: ON CONFLICT locked each of them (a write to
--    its page) though its WHERE then updated nothing.

-- 1. ------------------------------------------------------------------------------------------

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
    -- A term's counts move with its entry's counted state: published, type and live_from (0014):
    -- a re-date within the past moves none. The pairs that changed it are found first, and only
    -- their terms are read (this read the terms of every pair, then compared).
    changes := $changes$
      with moved as materialized (
        select o.id,
          o.status = 'published' as was_published, o.content_type_id as old_type, vitrine_live_from(o.published_at) as old_from,
          n.status = 'published' as is_published, n.content_type_id as new_type, vitrine_live_from(n.published_at) as new_from
        from old_rows o
        join new_rows n on n.id = o.id
        where (o.status = 'published' or n.status = 'published')
          and (o.status = 'published', o.content_type_id, vitrine_live_from(o.published_at))
            is distinct from (n.status = 'published', n.content_type_id, vitrine_live_from(n.published_at))
      )
      select 'author' as kind, o.author_id as key, o.content_type_id, vitrine_live_from(o.published_at) as live_from, -1 as delta
      from old_rows o
      where o.status = 'published' and o.author_id is not null
      union all
      select 'author', n.author_id, n.content_type_id, vitrine_live_from(n.published_at), 1
      from new_rows n
      where n.status = 'published' and n.author_id is not null
      union all
      select 'term', et.term_id, m.old_type, m.old_from, -1
      from moved m
      join entry_terms et on et.entry_id = m.id
      where m.was_published
      union all
      select 'term', et.term_id, m.new_type, m.new_from, 1
      from moved m
      join entry_terms et on et.entry_id = m.id
      where m.is_published
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

-- 2. ------------------------------------------------------------------------------------------

create or replace function vitrine_term_list_rows(term_ids bigint[])
returns table (term_id bigint, taxonomy_id bigint, content_type_id bigint, name text, carried_from timestamptz)
language plpgsql
stable
set search_path from current
as $$
begin
  return query
  with settled as (
    select t.id as term_id, t.taxonomy_id, t.name, ct.id as content_type_id, (
      select coalesce(sum(d.delta), 0)
      from live_filter_count_deltas d
      where d.kind = 'term'
        and d.key = t.id
        and d.content_type_id = ct.id
        and (d.live_from <= now() - interval '1 second' or d.live_from is null)
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
  having min(p.carried_from) is not null;
end
$$;

create or replace function vitrine_compact_term_lists() returns void
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
  -- Only the rows that changed are written: most writes leave a term carried as it was. Those
  -- that did not are not proposed at all (a conflict locks its row even when nothing is updated).
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
  where not exists (
    select 1
    from term_list_carried c
    where c.term_id = f.term_id
      and c.content_type_id = f.content_type_id
      and (c.taxonomy_id, c.name, c.carried_from) is not distinct from (f.taxonomy_id, f.name, f.carried_from)
  )
  on conflict (term_id, content_type_id) do update
  set taxonomy_id = excluded.taxonomy_id, name = excluded.name, carried_from = excluded.carried_from
  where (term_list_carried.taxonomy_id, term_list_carried.name, term_list_carried.carried_from)
    is distinct from (excluded.taxonomy_id, excluded.name, excluded.carried_from);
end
$$;
