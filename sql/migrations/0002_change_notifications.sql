-- Change notifications for the service's response cache (contract C36).
--
-- What they keep true: every statement that writes a content table of the data model, whoever
-- runs it (an admin panel, an import job, a person with psql), sends a notification on the
-- channel `vitrine_changes` when its transaction commits, and none when it rolls back.
-- For whom: every Vitrine process LISTENs on that channel and drops the cached answers the
-- write can have changed, so that no answer computed before a commit is served once that
-- commit's notification has arrived. Writers need do nothing: the triggers are the database's.
--
-- The payload is `<table>:<content type ids>` (comma-separated) when the rows say which types
-- they touch: entries, and the tables that hang off an entry. Otherwise `<table>:*`: anything
-- may have changed (a language, a content type renamed, an author, a term, an image).
-- The triggers are per statement, not per row: one notification per statement whatever the
-- number of rows, and PostgreSQL folds identical notifications of one transaction into one.

-- The functions run with their owner's rights and search_path (security definer): a writer
-- whose own search_path or grants differ still writes, and still notifies. A list of types
-- too long for a notification (8000 bytes) becomes `*`.
create function vitrine_notify_change(changed_table text, type_ids text) returns void
language sql
security definer
set search_path from current
as $$
  select pg_notify('vitrine_changes', changed_table || ':' || case when type_ids is null or length(type_ids) > 7000 then '*' else type_ids end)
$$;

-- A table whose rows do not say which content types they touch: everything may have changed.
create function vitrine_table_changed() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  perform vitrine_notify_change(tg_table_name, null);
  return null;
end
$$;

-- entries: the content types of the rows written, before and after.
create function vitrine_entries_changed() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  type_ids text;
begin
  if tg_op = 'INSERT' then
    select string_agg(distinct content_type_id::text, ',') into type_ids from new_rows;
  elsif tg_op = 'DELETE' then
    select string_agg(distinct content_type_id::text, ',') into type_ids from old_rows;
  else
    select string_agg(distinct content_type_id::text, ',') into type_ids
    from (select content_type_id from old_rows union select content_type_id from new_rows) written;
  end if;
  -- No row written, nothing changed.
  if type_ids is not null then
    perform vitrine_notify_change(tg_table_name, type_ids);
  end if;
  return null;
end
$$;

-- Tables keyed by entry_id: the content types of their entries. Rows whose entry is gone
-- (deleted by the same statement, through its cascade) are covered by the entries
-- notification; when no entry is left to ask, everything is dropped to be safe.
create function vitrine_entry_rows_changed() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  entry_ids bigint[];
  type_ids text;
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
  select string_agg(distinct content_type_id::text, ',') into type_ids from entries where id = any (entry_ids);
  perform vitrine_notify_change(tg_table_name, type_ids);
  return null;
end
$$;

-- Transition tables need one trigger per event.
create trigger vitrine_changes_insert after insert on entries
  referencing new table as new_rows for each statement execute function vitrine_entries_changed();
create trigger vitrine_changes_update after update on entries
  referencing old table as old_rows new table as new_rows for each statement execute function vitrine_entries_changed();
create trigger vitrine_changes_delete after delete on entries
  referencing old table as old_rows for each statement execute function vitrine_entries_changed();
create trigger vitrine_changes_truncate after truncate on entries
  for each statement execute function vitrine_table_changed();

do $$
declare
  entry_table text;
  other_table text;
begin
  foreach entry_table in array array['entry_translations', 'entry_terms', 'field_values'] loop
    execute format('create trigger vitrine_changes_insert after insert on %I referencing new table as new_rows for each statement execute function vitrine_entry_rows_changed()', entry_table);
    execute format('create trigger vitrine_changes_update after update on %I referencing old table as old_rows new table as new_rows for each statement execute function vitrine_entry_rows_changed()', entry_table);
    execute format('create trigger vitrine_changes_delete after delete on %I referencing old table as old_rows for each statement execute function vitrine_entry_rows_changed()', entry_table);
    execute format('create trigger vitrine_changes_truncate after truncate on %I for each statement execute function vitrine_table_changed()', entry_table);
  end loop;
  foreach other_table in array array['languages', 'content_types', 'authors', 'media', 'media_variants', 'taxonomies', 'terms', 'custom_fields'] loop
    execute format('create trigger vitrine_changes after insert or update or delete or truncate on %I for each statement execute function vitrine_table_changed()', other_table);
  end loop;
end
$$;
