-- The change log for incremental sync (contract C48). Design, costs and failure modes:
-- sql/change-log.md.
--
-- What the triggers keep true: every committed write, by any writer (admin panel, import job,
-- psql, COPY, TRUNCATE), that can change the item of an entry that is or was published leaves a
-- row in `change_log` in the same transaction. A row names either one entry of a content type,
-- every entry of a type (`entry_id` null: a custom field or the type itself changed), or a shared
-- row that entries show (`shared_table`, `shared_id`: an author, a term, a taxonomy, an image;
-- the service finds the entries that show it when it reads). Go-lives of embargoed entries need
-- no row: the service reads them from `entries` by their publication time.
-- For whom: `GET /api/v1/sync/{type}` reads the rows written since a sync token's snapshot.
--
-- Writers pay one insert per statement (one row per published entry written, or one row per
-- shared row written); reading what a shared row reaches is the reader's cost, not the writer's.
-- Once an hour one writer prunes the rows older than `change_log_state.retention`.

create table change_log (
  -- Taken from the sequence when the row is written, so never decreasing in time; a transaction
  -- that commits late can hold positions below those of one that committed before it, which is
  -- why a sync token also keeps the transactions in progress when it was made (see the design).
  position bigint generated always as identity,
  -- null for a shared row.
  content_type_id bigint,
  -- null: every entry of the type (or, for a shared row, of every type) may have changed.
  entry_id bigint,
  shared_table text,
  shared_id bigint,
  -- The entry's publication time before the write, when it was published in this type
  -- ('-infinity' when undated); null otherwise. An entry no longer live whose time had come may
  -- be in a client's copy: it is reported deleted.
  left_from timestamptz,
  xid xid8 not null default pg_current_xact_id(),
  changed_at timestamptz not null default now()
);

-- A delta reads one type's rows (and the shared rows, content_type_id null) after a position.
create index change_log_type_position on change_log (content_type_id, position) include (entry_id, left_from);
-- ... and the rows of the transactions that were in progress when its token was made.
create index change_log_xid on change_log (xid);
-- Pruning reads by age; rows come in time order, so a block range index is enough.
create index change_log_changed_at on change_log using brin (changed_at);

create table change_log_state (
  one boolean primary key default true check (one),
  -- Rows older than this are pruned; SYNC_RETENTION_DAYS should not exceed it.
  retention interval not null default '30 days',
  -- Sync tokens made before this are expired (410): rows they need may be gone.
  pruned_before timestamptz not null default '-infinity',
  pruned_at timestamptz not null default '-infinity'
);
insert into change_log_state default values;

-- Deletes the rows older than the retention, at most once an hour, by one writer at a time
-- (try-lock: another writer skips instead of waiting), in read committed transactions only (as
-- the folds of 0003). Tokens made before the cut become expired.
create function vitrine_prune_change_log() returns void
language plpgsql
security definer
set search_path from current
as $$
declare
  state change_log_state;
begin
  select * into state from change_log_state;
  if state.pruned_at > now() - interval '1 hour'
    or current_setting('transaction_isolation') <> 'read committed'
    or not pg_try_advisory_xact_lock(hashtext('vitrine_prune_change_log')) then
    return;
  end if;
  delete from change_log where changed_at < now() - state.retention;
  update change_log_state set pruned_before = greatest(pruned_before, now() - state.retention), pruned_at = now();
end
$$;

-- After writes made with the triggers disabled (see the design): every token made before now
-- is expired, so every client starts a new sync. Run by the database owner.
create function vitrine_expire_sync_tokens() returns void
language sql
security definer
set search_path from current
as $$
  update change_log_state set pruned_before = now();
$$;

-- entries: one row per published entry written, in its type before (with its publication
-- time: it may have been live) and after the write. Drafts written and left drafts: nothing.
create function vitrine_entries_logged() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  if tg_op = 'INSERT' then
    insert into change_log (content_type_id, entry_id)
    select n.content_type_id, n.id
    from new_rows n
    where n.status = 'published';
  elsif tg_op = 'DELETE' then
    insert into change_log (content_type_id, entry_id, left_from)
    select o.content_type_id, o.id, coalesce(o.published_at, '-infinity')
    from old_rows o
    where o.status = 'published';
  else
    insert into change_log (content_type_id, entry_id, left_from)
    select written.content_type_id, written.id, max(written.left_from)
    from (
      select o.content_type_id, o.id, coalesce(o.published_at, '-infinity') as left_from
      from old_rows o
      where o.status = 'published'
      union all
      select n.content_type_id, n.id, null
      from new_rows n
      where n.status = 'published'
    ) written
    group by written.content_type_id, written.id;
  end if;
  perform vitrine_prune_change_log();
  return null;
end
$$;

-- TRUNCATE entries: every published entry, before it goes (a statement trigger after it
-- could no longer name them).
create function vitrine_entries_truncate_logged() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  insert into change_log (content_type_id, entry_id, left_from)
  select e.content_type_id, e.id, coalesce(e.published_at, '-infinity')
  from entries e
  where e.status = 'published';
  return null;
end
$$;

-- Tables keyed by entry_id: one row per published entry they belong to. The entries are
-- locked (for share) while their type and status are read: a concurrent writer that moves or
-- publishes one of them either waits for this statement's commit or has committed and is read
-- here. Without the lock this write could be logged under the type the entry is leaving, or
-- not at all, while the entry's own row is read before this write commits.
create function vitrine_entry_rows_logged() returns trigger
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
  if entry_ids is null then
    return null;
  end if;
  insert into change_log (content_type_id, entry_id)
  select locked.content_type_id, locked.id
  from (
    select e.content_type_id, e.id, e.status
    from entries e
    where e.id = any (entry_ids)
    order by e.id
    for share
  ) locked
  where locked.status = 'published';
  perform vitrine_prune_change_log();
  return null;
end
$$;

-- Shared rows: one row per row written; the reader finds the entries that show it. Rows that
-- say nothing of which entries they reach (a language, a TRUNCATE) have shared_id null: every
-- entry of every type may have changed.
create function vitrine_shared_rows_logged() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  ids bigint[];
begin
  if tg_op = 'TRUNCATE' or tg_table_name = 'languages' then
    insert into change_log (shared_table) values (tg_table_name);
  else
    -- A variant is its image's: the entries that show the image.
    if tg_table_name = 'media_variants' and tg_op = 'INSERT' then
      select array_agg(distinct n.media_id) into ids from new_rows n;
    elsif tg_table_name = 'media_variants' and tg_op = 'DELETE' then
      select array_agg(distinct o.media_id) into ids from old_rows o;
    elsif tg_table_name = 'media_variants' then
      select array_agg(distinct written.media_id) into ids
      from (select media_id from old_rows union select media_id from new_rows) written;
    elsif tg_op = 'DELETE' then
      select array_agg(o.id) into ids from old_rows o;
    else
      select array_agg(distinct written.id) into ids
      from (select id from old_rows union select id from new_rows) written;
    end if;
    insert into change_log (shared_table, shared_id)
    select case when tg_table_name = 'media_variants' then 'media' else tg_table_name end, s.id
    from unnest(ids) s(id);
  end if;
  perform vitrine_prune_change_log();
  return null;
end
$$;

-- Tables whose rows name a content type (custom fields, the type itself): every entry of it.
create function vitrine_type_rows_logged() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  type_ids bigint[];
begin
  if tg_op = 'TRUNCATE' then
    insert into change_log (shared_table) values (tg_table_name);
    return null;
  end if;
  if tg_table_name = 'content_types' then
    if tg_op = 'INSERT' then
      -- A new type has no entry yet.
      return null;
    elsif tg_op = 'DELETE' then
      select array_agg(o.id) into type_ids from old_rows o;
    else
      -- An upsert that rewrites the same name changes no item.
      select array_agg(n.id) into type_ids
      from new_rows n
      join old_rows o on o.id = n.id
      where (o.slug, o.name) is distinct from (n.slug, n.name);
    end if;
  elsif tg_op = 'INSERT' then
    select array_agg(distinct n.content_type_id) into type_ids from new_rows n;
  elsif tg_op = 'DELETE' then
    select array_agg(distinct o.content_type_id) into type_ids from old_rows o;
  else
    select array_agg(distinct written.content_type_id) into type_ids
    from (select content_type_id from old_rows union select content_type_id from new_rows) written;
  end if;
  insert into change_log (content_type_id)
  select distinct t.id
  from unnest(type_ids) t(id);
  perform vitrine_prune_change_log();
  return null;
end
$$;

create trigger vitrine_log_insert after insert on entries
  referencing new table as new_rows for each statement execute function vitrine_entries_logged();
create trigger vitrine_log_update after update on entries
  referencing old table as old_rows new table as new_rows for each statement execute function vitrine_entries_logged();
create trigger vitrine_log_delete after delete on entries
  referencing old table as old_rows for each statement execute function vitrine_entries_logged();
create trigger vitrine_log_truncate before truncate on entries
  for each statement execute function vitrine_entries_truncate_logged();

do $$
declare
  entry_table text;
  shared_table text;
  type_table text;
begin
  foreach entry_table in array array['entry_translations', 'entry_terms', 'field_values'] loop
    execute format('create trigger vitrine_log_insert after insert on %I referencing new table as new_rows for each statement execute function vitrine_entry_rows_logged()', entry_table);
    execute format('create trigger vitrine_log_update after update on %I referencing old table as old_rows new table as new_rows for each statement execute function vitrine_entry_rows_logged()', entry_table);
    execute format('create trigger vitrine_log_delete after delete on %I referencing old table as old_rows for each statement execute function vitrine_entry_rows_logged()', entry_table);
    -- Every entry that had such rows may have changed: as a shared row of every type.
    execute format('create trigger vitrine_log_truncate after truncate on %I for each statement execute function vitrine_shared_rows_logged()', entry_table);
  end loop;
  -- Inserts of authors, media, taxonomies and terms reach no entry: an entry that starts to
  -- show one is written itself. Their deletes reach entries through cascades (set null on
  -- entries, entry_terms deleted), which are logged as such; they are logged here too, cheaply.
  foreach shared_table in array array['authors', 'media', 'taxonomies', 'terms'] loop
    execute format('create trigger vitrine_log_update after update on %I referencing old table as old_rows new table as new_rows for each statement execute function vitrine_shared_rows_logged()', shared_table);
    execute format('create trigger vitrine_log_delete after delete on %I referencing old table as old_rows for each statement execute function vitrine_shared_rows_logged()', shared_table);
    execute format('create trigger vitrine_log_truncate after truncate on %I for each statement execute function vitrine_shared_rows_logged()', shared_table);
  end loop;
  -- A variant inserted changes the item (C15: a missing variant shows the image's path).
  execute 'create trigger vitrine_log_insert after insert on media_variants referencing new table as new_rows for each statement execute function vitrine_shared_rows_logged()';
  execute 'create trigger vitrine_log_update after update on media_variants referencing old table as old_rows new table as new_rows for each statement execute function vitrine_shared_rows_logged()';
  execute 'create trigger vitrine_log_delete after delete on media_variants referencing old table as old_rows for each statement execute function vitrine_shared_rows_logged()';
  execute 'create trigger vitrine_log_truncate after truncate on media_variants for each statement execute function vitrine_shared_rows_logged()';
  execute 'create trigger vitrine_log_changes after insert or update or delete or truncate on languages for each statement execute function vitrine_shared_rows_logged()';
  foreach type_table in array array['custom_fields', 'content_types'] loop
    execute format('create trigger vitrine_log_insert after insert on %I referencing new table as new_rows for each statement execute function vitrine_type_rows_logged()', type_table);
    execute format('create trigger vitrine_log_update after update on %I referencing old table as old_rows new table as new_rows for each statement execute function vitrine_type_rows_logged()', type_table);
    execute format('create trigger vitrine_log_delete after delete on %I referencing old table as old_rows for each statement execute function vitrine_type_rows_logged()', type_table);
    execute format('create trigger vitrine_log_truncate after truncate on %I for each statement execute function vitrine_type_rows_logged()', type_table);
  end loop;
end
$$;

revoke execute on function vitrine_prune_change_log() from public;
revoke execute on function vitrine_expire_sync_tokens() from public;

-- The first sync walks a type's published entries by id.
create index entries_sync_walk on entries (content_type_id, id) where status = 'published';
