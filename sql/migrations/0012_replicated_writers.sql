-- Writers that statement triggers never hear, and TRUNCATE at the cost of a truncate (contract
-- C36, C48, C49, C51, C56). The design: sql/any-writer.md ("Logical replication", "TRUNCATE").
--
-- What these keep true: a write that reaches this database by PostgreSQL logical replication keeps
-- every structure beside the data model as the same write made here would (the guards, the live,
-- filter and term counts, the term lists, the change log, the search documents and postings, the
-- notifications), and is heard by every Vitrine like any other.
-- Why row triggers: a subscription's apply worker runs with session_replication_role = replica and
-- fires row triggers enabled for replicas only, never statement triggers (PostgreSQL's
-- documentation, "Logical Replication, Architecture"); its initial copy fires both, for replicas
-- only. Each content table gets one row trigger `vitrine_replicated`, enabled for replicas only, that
-- does for its row what the statement triggers do for a statement, in the same order: an ordinary
-- writer never fires it, the apply worker never fires the statement triggers, so nothing is done
-- twice. The triggers on the service's own tables (fired by these writes) fire always.
-- Rows may arrive in any order (the initial copy copies tables in parallel; no foreign key is
-- checked in replica mode): an entry arriving after its rows takes them in then (its guard, its
-- postings, its terms' counts).

-- 1. Helpers shared by the statement triggers and the row triggers. --------------------------------
-- Called only by those triggers, which run as the owner with the migration's search path: the
-- helpers need neither (a function that sets them is entered at ten times the cost: 0.35 ms a call).

-- 0005: one change-log row per published entry among these.
create function vitrine_log_entries(entry_ids bigint[]) returns void
language plpgsql
as $$
begin
  insert into change_log (content_type_id, entry_id)
  select e.content_type_id, e.id
  from entries e
  where e.id = any (entry_ids)
    and e.status = 'published';
  perform vitrine_prune_change_log();
end
$$;

create or replace function vitrine_entry_rows_logged() returns trigger
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
    perform vitrine_log_entries(entry_ids);
  end if;
  return null;
end
$$;

-- 0002: the notification of a write of these entries' rows, naming their types.
create function vitrine_notify_entries(changed_table text, entry_ids bigint[]) returns void
language plpgsql
as $$
declare
  type_ids text;
begin
  select string_agg(distinct content_type_id::text, ',') into type_ids from entries where id = any (entry_ids);
  perform vitrine_notify_change(changed_table, type_ids);
end
$$;

-- 0002's, in PL/pgSQL now: called by every trigger, its plan is kept for the session.
create or replace function vitrine_notify_change(changed_table text, type_ids text) returns void
language plpgsql
security definer
set search_path from current
as $$
begin
  perform pg_notify('vitrine_changes', changed_table || ':' || case when type_ids is null or length(type_ids) > 7000 then '*' else type_ids end);
end
$$;

create or replace function vitrine_entry_rows_changed() returns trigger
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
    perform vitrine_notify_entries(tg_table_name, entry_ids);
  end if;
  return null;
end
$$;

-- 0004 and 0007: term counts moved by one row of an entry (+1 or -1 at its type and publication time,
-- settled when already live: vitrine_live_from, 0014), folded and compacted as the statement triggers do.
create function vitrine_count_terms(term_ids bigint[], content_type_id bigint, live_from timestamptz, delta bigint) returns void
language plpgsql
as $$
begin
  if cardinality(term_ids) > 0 then
    insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta)
    select 'term', t.id, content_type_id, vitrine_live_from(live_from), delta
    from unnest(term_ids) t(id);
    perform vitrine_fold_live_filter_counts(array_fill('term'::text, array[cardinality(term_ids)]), term_ids, array_fill(content_type_id, array[cardinality(term_ids)]));
  end if;
end
$$;

-- 2. The row triggers of the apply worker. ------------------------------------------------------

-- The search document of a translation row, made, replaced or removed. (A row is "is not null" only
-- when every field is: the operation says which rows there are.)
create function vitrine_translation_searched(operation text, old_row entry_translations, new_row entry_translations) returns void
language plpgsql
as $$
begin
  if operation = 'DELETE' or (operation = 'UPDATE' and (old_row.entry_id, old_row.language_code) is distinct from (new_row.entry_id, new_row.language_code)) then
    delete from search_documents where entry_id = old_row.entry_id and language_code = old_row.language_code;
  end if;
  if operation = 'INSERT' or (operation = 'UPDATE' and (old_row.entry_id, old_row.language_code) is distinct from (new_row.entry_id, new_row.language_code)) then
    insert into search_documents (entry_id, language_code, document)
    values (new_row.entry_id, new_row.language_code, vitrine_search_document(new_row.language_code, new_row.title, new_row.excerpt, new_row.body))
    on conflict (entry_id, language_code) do update
    set document = excluded.document;
  elsif operation = 'UPDATE' and (old_row.title, old_row.excerpt, old_row.body) is distinct from (new_row.title, new_row.excerpt, new_row.body) then
    update search_documents
    set document = vitrine_search_document(new_row.language_code, new_row.title, new_row.excerpt, new_row.body)
    where entry_id = new_row.entry_id
      and language_code = new_row.language_code;
  end if;
end
$$;

create function vitrine_entries_replicated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  was_published boolean := tg_op <> 'INSERT' and old.status = 'published';
  is_published boolean := tg_op <> 'DELETE' and new.status = 'published';
  term_ids bigint[];
begin
  -- Enabled for replicas only; should someone enable it for every writer (`enable trigger all`), the
  -- statement triggers already did this: nothing twice.
  if current_setting('session_replication_role') <> 'replica' then
    return null;
  end if;
  -- The guard (0010): made with the entry, changed with its state, gone with it; the postings follow
  -- (an entry arriving after its translations, as in the initial copy, gets their postings then).
  if tg_op = 'DELETE' or (tg_op = 'UPDATE' and new.id <> old.id) then
    delete from entry_guards where entry_id = old.id;
  end if;
  if tg_op = 'INSERT' or (tg_op = 'UPDATE' and (new.id, new.content_type_id, new.status, new.published_at, new.author_id) is distinct from (old.id, old.content_type_id, old.status, old.published_at, old.author_id)) then
    insert into entry_guards (entry_id, content_type_id, published, published_at, author_id)
    values (new.id, new.content_type_id, is_published, new.published_at, new.author_id)
    on conflict (entry_id) do update
    set content_type_id = excluded.content_type_id,
      published = excluded.published,
      published_at = excluded.published_at,
      author_id = excluded.author_id,
      writes = entry_guards.writes + 1;
    -- Its postings follow (0011), as the guard trigger of entries has them follow.
    if was_published and not is_published then
      delete from search_postings p
      using search_documents d
      cross join lateral unnest(d.document) u
      where d.entry_id = old.id
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    elsif is_published and not was_published then
      insert into search_postings
      select d.language_code, p.lexeme, d.entry_id, new.content_type_id, true, new.published_at, new.author_id, p.score
      from search_documents d
      cross join lateral vitrine_document_postings(d.document) p
      where d.entry_id = new.id
        and d.posted
      on conflict do nothing;
    elsif is_published and (new.content_type_id, new.published_at, new.author_id) is distinct from (old.content_type_id, old.published_at, old.author_id) then
      update search_postings p
      set content_type_id = new.content_type_id, published_at = new.published_at, author_id = new.author_id
      from search_documents d
      cross join lateral unnest(d.document) u
      where d.entry_id = new.id
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    end if;
  end if;
  -- The live counts (0003).
  if was_published is distinct from is_published or (was_published and (new.content_type_id, new.published_at) is distinct from (old.content_type_id, old.published_at)) then
    if was_published then
      insert into live_entry_count_deltas (content_type_id, live_from, delta) values (old.content_type_id, vitrine_live_from(old.published_at), -1);
      perform vitrine_fold_live_entry_counts(array[old.content_type_id]);
    end if;
    if is_published then
      insert into live_entry_count_deltas (content_type_id, live_from, delta) values (new.content_type_id, vitrine_live_from(new.published_at), 1);
      perform vitrine_fold_live_entry_counts(array[new.content_type_id]);
    end if;
  end if;
  -- The filter counts (0004): the author's; the terms' when the entry's state moved (an entry
  -- arriving after its terms counts them now; one leaving counts them out while they are still there).
  if was_published and (tg_op = 'DELETE' or not is_published or (new.author_id, new.content_type_id, new.published_at) is distinct from (old.author_id, old.content_type_id, old.published_at)) and old.author_id is not null then
    insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta) values ('author', old.author_id, old.content_type_id, vitrine_live_from(old.published_at), -1);
    perform vitrine_fold_live_filter_counts(array['author'], array[old.author_id], array[old.content_type_id]);
  end if;
  if is_published and (tg_op = 'INSERT' or not was_published or (new.author_id, new.content_type_id, new.published_at) is distinct from (old.author_id, old.content_type_id, old.published_at)) and new.author_id is not null then
    insert into live_filter_count_deltas (kind, key, content_type_id, live_from, delta) values ('author', new.author_id, new.content_type_id, vitrine_live_from(new.published_at), 1);
    perform vitrine_fold_live_filter_counts(array['author'], array[new.author_id], array[new.content_type_id]);
  end if;
  if tg_op = 'INSERT' or was_published is distinct from is_published or (new.content_type_id, new.published_at) is distinct from (old.content_type_id, old.published_at) then
    if was_published then
      select array_agg(et.term_id) into term_ids from entry_terms et where et.entry_id = old.id;
      perform vitrine_count_terms(term_ids, old.content_type_id, old.published_at, -1);
    end if;
    if is_published then
      select array_agg(et.term_id) into term_ids from entry_terms et where et.entry_id = new.id;
      perform vitrine_count_terms(term_ids, new.content_type_id, new.published_at, 1);
    end if;
    perform vitrine_compact_term_lists();
  end if;
  -- The change log (0005): the entry, in its type before (with its publication time) and after.
  if was_published or is_published then
    insert into change_log (content_type_id, entry_id, left_from)
    select written.content_type_id, written.id, max(written.left_from)
    from (
      select old.content_type_id, old.id, coalesce(old.published_at, '-infinity') as left_from
      where was_published
      union all
      select new.content_type_id, new.id, null
      where is_published
    ) written
    group by written.content_type_id, written.id;
    perform vitrine_prune_change_log();
  end if;
  -- The notification (0002).
  perform vitrine_notify_change('entries', (
    select string_agg(distinct type_id::text, ',')
    from (select old.content_type_id where tg_op <> 'INSERT' union select new.content_type_id where tg_op <> 'DELETE') written(type_id)
  ));
  return null;
end
$$;

-- entry_translations, entry_terms, field_values: the guard, what the row changes, the log, the notification.
create function vitrine_entry_rows_replicated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  entry_ids bigint[] := array(
    select distinct written.id
    from (select old.entry_id where tg_op <> 'INSERT' union select new.entry_id where tg_op <> 'DELETE') written(id)
  );
  entry entries;
begin
  -- Enabled for replicas only; should someone enable it for every writer (`enable trigger all`), the
  -- statement triggers already did this: nothing twice.
  if current_setting('session_replication_role') <> 'replica' then
    return null;
  end if;
  -- A row deleted after its entry (the cascade on the publisher) makes no guard for the entry gone.
  perform vitrine_guard_entries(entry_ids, tg_op <> 'DELETE');
  if tg_table_name = 'entry_translations' then
    perform vitrine_translation_searched(tg_op, old, new);
  elsif tg_table_name = 'entry_terms' then
    if tg_op <> 'INSERT' then
      select * into entry from entries where id = old.entry_id;
      if entry.status = 'published' then
        perform vitrine_count_terms(array[old.term_id], entry.content_type_id, entry.published_at, -1);
      end if;
    end if;
    if tg_op <> 'DELETE' then
      select * into entry from entries where id = new.entry_id;
      if entry.status = 'published' then
        perform vitrine_count_terms(array[new.term_id], entry.content_type_id, entry.published_at, 1);
      end if;
    end if;
    perform vitrine_compact_term_lists();
  end if;
  perform vitrine_log_entries(entry_ids);
  perform vitrine_notify_entries(tg_table_name, entry_ids);
  return null;
end
$$;

-- Tables of shared rows (authors, media, media_variants, taxonomies, terms) and of type rows
-- (content_types, custom_fields), and languages: the log and the notification; a term renamed or
-- moved makes its term lists dirty.
create function vitrine_shared_rows_replicated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  -- Enabled for replicas only; should someone enable it for every writer (`enable trigger all`), the
  -- statement triggers already did this: nothing twice.
  if current_setting('session_replication_role') <> 'replica' then
    return null;
  end if;
  if tg_table_name = 'languages' then
    insert into change_log (shared_table) values ('languages');
  elsif tg_table_name = 'media_variants' then
    insert into change_log (shared_table, shared_id)
    select 'media', v.media_id
    from (select old.media_id where tg_op <> 'INSERT' union select new.media_id where tg_op <> 'DELETE') v(media_id);
  elsif tg_table_name in ('authors', 'media', 'taxonomies', 'terms') then
    if tg_op <> 'INSERT' then
      insert into change_log (shared_table, shared_id) values (tg_table_name, old.id);
    end if;
  elsif tg_table_name = 'content_types' then
    if tg_op = 'DELETE' or (tg_op = 'UPDATE' and (old.slug, old.name) is distinct from (new.slug, new.name)) then
      insert into change_log (content_type_id) values (old.id);
    end if;
  elsif tg_table_name = 'custom_fields' then
    insert into change_log (content_type_id)
    select distinct t.id
    from (select old.content_type_id where tg_op <> 'INSERT' union select new.content_type_id where tg_op <> 'DELETE') t(id);
  end if;
  -- A term's list rows name it and its type: a term renamed or moved, or one that arrives after the
  -- rows that count it (the initial copy), and every term counted in a type that arrives late, are
  -- made again. Nested: an expression is planned whole, and only these tables have these columns.
  if tg_table_name = 'terms' and tg_op <> 'DELETE' then
    if tg_op = 'INSERT' or (new.taxonomy_id, new.name) is distinct from (old.taxonomy_id, old.name) then
      insert into term_list_dirty (term_id) values (new.id);
      perform vitrine_compact_term_lists();
    end if;
  elsif tg_table_name = 'content_types' and tg_op = 'INSERT' then
    insert into term_list_dirty (term_id)
    select distinct d.key
    from live_filter_count_deltas d
    where d.kind = 'term'
      and d.content_type_id = new.id;
    perform vitrine_compact_term_lists();
  end if;
  perform vitrine_prune_change_log();
  perform vitrine_notify_change(tg_table_name, null);
  return null;
end
$$;

do $$
declare
  content_table text;
begin
  execute 'create trigger vitrine_replicated after insert or update or delete on entries for each row execute function vitrine_entries_replicated()';
  foreach content_table in array array['entry_translations', 'entry_terms', 'field_values'] loop
    execute format('create trigger vitrine_replicated after insert or update or delete on %I for each row execute function vitrine_entry_rows_replicated()', content_table);
  end loop;
  foreach content_table in array array['languages', 'content_types', 'authors', 'media', 'media_variants', 'taxonomies', 'terms', 'custom_fields'] loop
    execute format('create trigger vitrine_replicated after insert or update or delete on %I for each row execute function vitrine_shared_rows_replicated()', content_table);
  end loop;
  foreach content_table in array array['entries', 'entry_translations', 'entry_terms', 'field_values', 'languages', 'content_types', 'authors', 'media', 'media_variants', 'taxonomies', 'terms', 'custom_fields'] loop
    execute format('alter table %I enable replica trigger vitrine_replicated', content_table);
  end loop;
end
$$;

-- The triggers on the service's own tables, which the row triggers above write: always.
alter table search_documents enable always trigger search_documents_posted_insert;
alter table search_documents enable always trigger search_documents_posted_update;
alter table search_documents enable always trigger search_documents_posted_delete;
alter table live_filter_count_deltas enable always trigger term_lists_touched_insert;
alter table live_filter_count_deltas enable always trigger term_lists_touched_delete;

-- 3. TRUNCATE: the apply worker fires truncate triggers enabled always; and each costs a truncate. --

-- 0003 and 0004 deleted every kept count row one by one.
create or replace function vitrine_entries_truncated_counted() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  truncate live_entry_count_deltas;
  return null;
end
$$;

create or replace function vitrine_entries_filter_truncated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  truncate live_filter_count_deltas, term_list_carried, term_list_dirty;
  return null;
end
$$;

-- entry_terms alone: the term rows go (the author rows stay), and no term is carried any more.
create or replace function vitrine_entry_terms_filter_truncated() returns trigger
language plpgsql
security definer
set search_path from current
as $$
begin
  delete from live_filter_count_deltas where kind = 'term';
  truncate term_list_carried, term_list_dirty;
  return null;
end
$$;

do $$
declare
  found record;
begin
  for found in
    select c.relname, t.tgname
    from pg_trigger t
    join pg_class c on c.oid = t.tgrelid
    where not t.tgisinternal
      and c.relname in ('entries', 'entry_translations', 'entry_terms', 'field_values', 'languages', 'content_types', 'authors', 'media', 'media_variants', 'taxonomies', 'terms', 'custom_fields')
      -- TRUNCATE is bit 5 of tgtype.
      and t.tgtype & 32 <> 0
  loop
    execute format('alter table %I enable always trigger %I', found.relname, found.tgname);
  end loop;
end
$$;
