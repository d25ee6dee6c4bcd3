-- Entry guards (contract C56): one small row per entry that every writer of the entry's kept rows
-- updates, so that the kept structures are exact whatever the writers' isolation levels. The
-- design, the races it closes and what it costs: sql/any-writer.md.
--
-- What the triggers keep true: for every entry that has a row here, `content_type_id`,
-- `published` (status = 'published'), `published_at` and `author_id` are the entry's, in every
-- snapshot, and the row was updated by every transaction that wrote the entry's kept rows. Every
-- entry with a translation, a term or a field value has a row; other entries may have none.
-- For whom: every trigger that reads an entry's state to keep something beside it (search rows,
-- term counts, the change log, notifications) first updates the entry's guard, then reads. Two
-- writers of one entry thus always see each other:
--   - in read committed, the later one waits for the earlier one's commit on the guard row, and its
--     next statement reads what that one wrote;
--   - in repeatable read or serializable, a guard updated by a transaction that committed after the
--     writer's snapshot was taken is a serialization failure (SQLSTATE 40001): the writer retries.
-- A share lock, which the triggers took before, does neither: a committed lock does not make a
-- repeatable read update fail, and a share lock taken after the other writer's update deadlocked.
--
-- Writers pay one upsert per entry written per statement (a HOT update: no index changes); an
-- insert of entries pays nothing (nobody else can write rows of an entry not yet committed).

create table entry_guards (
  entry_id bigint primary key,
  content_type_id bigint not null,
  published boolean not null,
  published_at timestamptz,
  author_id bigint,
  -- Bumped by every statement that writes the entry's translations, terms or field values: an
  -- update of the row, not merely a lock, is what a racing repeatable read writer cannot pass.
  writes bigint not null default 0
) with (fillfactor = 80);

insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
select e.id, e.content_type_id, e.status = 'published', e.published_at, e.author_id
from entries e;

-- entries, per statement: the entries whose type, status, publication time or author changed get
-- their new state, in id order (two writers of several entries take the guards in the same order:
-- they wait, never deadlock); deleted entries lose their guard. Inserted entries need none yet.
create function vitrine_entries_guarded() returns trigger
language plpgsql
security definer
set search_path from current
as $$
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
  elsif tg_op = 'DELETE' then
    delete from entry_guards g
    using old_rows o
    where g.entry_id = o.id;
  end if;
  return null;
end
$$;

-- TRUNCATE entries (cascading to every table that hangs off it): every guard goes, at the cost of
-- truncating one table.
create function vitrine_entries_truncated_guarded() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  truncate entry_guards;
  return null;
end
$$;

-- The guards of these entries, updated (made when missing, with the entry's state), in id order.
-- With `unseen`, an entry this transaction cannot see gets a guard too, as an unpublished one of no
-- type: under logical replication an entry's rows may come before it, copied by another worker at the
-- same moment (0012); the guard then orders the two, and the entry's arrival sets its state. A guard
-- made or changed meanwhile by a writer of the entry keeps that writer's state (only `writes` moves).
-- Called only by the service's triggers, which run as the owner with the migration's search path: it
-- needs neither (a function that sets them is entered at ten times the cost, 0.35 ms a call).
create function vitrine_guard_entries(entry_ids bigint[], unseen boolean default false) returns void
language plpgsql
as $$
begin
  -- `= any` and a subquery per id: index look-ups whatever the number of ids (a join with the array's
  -- rows may be planned, once generic, as a scan of every entry).
  insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
  select *
  from (
    select e.id, e.content_type_id, e.status = 'published', e.published_at, e.author_id
    from entries e
    where e.id = any (entry_ids)
    union all
    select i.id, 0, false, null::timestamptz, null::int8
    from unnest(entry_ids) i(id)
    where unseen
      and (select count(*) from entries e where e.id = i.id) = 0
  ) guarded(entry_id)
  order by entry_id
  on conflict (entry_id) do update
  set writes = entry_guards.writes + 1;
end
$$;

-- entry_translations, entry_terms, field_values, per statement: the guards of the entries whose
-- rows were written, before any other trigger of the statement reads those entries. Rows of an entry
-- deleted by the same statement's cascade have no entry left to guard.
create function vitrine_entry_rows_guarded() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  entry_ids bigint[];
begin
  if tg_op = 'INSERT' then
    select array_agg(distinct entry_id) into entry_ids from new_rows;
  elsif tg_op = 'DELETE' then
    select array_agg(distinct entry_id) into entry_ids from old_rows;
  else
    select array_agg(distinct entry_id) into entry_ids
    from (select entry_id from old_rows union select entry_id from new_rows) written;
  end if;
  if entry_ids is not null then
    perform vitrine_guard_entries(entry_ids);
  end if;
  return null;
end
$$;

-- Triggers of one event fire in name order: `0_guarded` comes before every other trigger of these
-- tables, so every read of an entry by a later trigger of the statement happens under its guard.
create trigger entries_0_guarded_update after update on entries
  referencing old table as old_rows new table as new_rows
  for each statement execute function vitrine_entries_guarded();
create trigger entries_0_guarded_delete after delete on entries
  referencing old table as old_rows
  for each statement execute function vitrine_entries_guarded();
create trigger entries_0_guarded_truncate after truncate on entries
  for each statement execute function vitrine_entries_truncated_guarded();

do $$
declare
  entry_table text;
begin
  foreach entry_table in array array['entry_translations', 'entry_terms', 'field_values'] loop
    execute format('create trigger %I after insert on %I referencing new table as new_rows for each statement execute function vitrine_entry_rows_guarded()', entry_table || '_0_guarded_insert', entry_table);
    execute format('create trigger %I after update on %I referencing old table as old_rows new table as new_rows for each statement execute function vitrine_entry_rows_guarded()', entry_table || '_0_guarded_update', entry_table);
    execute format('create trigger %I after delete on %I referencing old table as old_rows for each statement execute function vitrine_entry_rows_guarded()', entry_table || '_0_guarded_delete', entry_table);
  end loop;
end
$$;

-- The share locks that 0004 and 0005 took before reading an entry go (0012 and 0014 restate those
-- functions without them): the guard, taken first, orders the writers of an entry, and a share lock
-- taken after it deadlocked with a writer of the entry's row waiting for that guard.
