-- 0019: what the guard trigger of entries costs a bulk status change or re-date beyond the plain
-- write (issue: search that real sites can afford; contract C55, C56). The design:
-- sql/any-writer.md ("What a bulk write of entries pays its guards"). Nothing a reader sees
-- changes; the same rows are written.
--
-- 1. The postings follow their entry (0011) through the entry's posted documents. Finding them
--    read each entry's documents in search_documents_pkey and their heap rows, for the `posted`
--    flag: 3 000 buffers to learn that 1 000 long articles have none. A partial index of the posted
--    documents' entries answers the same question from a small index (empty on a site of long
--    articles): publishing 1 000 articles, the guard trigger 10.9 -> 7.9 ms.
-- 2. A changed id is looked for only when the pairs say there is one: the same pass that finds
--    the three kinds of change counts the old rows that have no new one (an anti join of the
--    two transition tables, about 1 ms for 1 000 rows, ran on every update).

-- 1. ------------------------------------------------------------------------------------------

create index search_documents_posted_entries on search_documents (entry_id) where posted;

-- 2. ------------------------------------------------------------------------------------------

create or replace function vitrine_entries_guarded() returns trigger
language plpgsql
security definer
set search_path from current
as $$
declare
  unpublished boolean;
  published boolean;
  moved boolean;
  renumbered boolean;
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
    -- One pass over the pairs: which of the three kinds of change there are, and whether an old
    -- row has no new one (its id changed: the left join gives it one row of nulls, and n.id, a
    -- primary key, is null in no other). An aggregate without group by always returns its row.
    select coalesce(bool_or(o.status = 'published' and n.status <> 'published'), false),
      coalesce(bool_or(n.status = 'published' and o.status <> 'published'), false),
      coalesce(bool_or(o.status = 'published' and n.status = 'published' and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)), false),
      count(*) <> count(n.id)
    into unpublished, published, moved, renumbered
    from old_rows o
    left join new_rows n on n.id = o.id;
    -- An id changed (no row hangs off the entry, or the foreign keys would have refused it).
    if renumbered then
      delete from entry_guards g
      using old_rows o
      where g.entry_id = o.id
        and not exists (select 1 from new_rows n where n.id = o.id);
    end if;
    -- Unpublished: the postings go, by key.
    if unpublished then
      delete from search_postings p
      using old_rows o
      join new_rows n on n.id = o.id
      join search_documents d on d.entry_id = o.id
      cross join lateral unnest(d.document) u
      where o.status = 'published'
        and n.status <> 'published'
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    end if;
    -- Published: they come.
    if published then
      insert into search_postings
      select d.language_code, p.lexeme, d.entry_id, n.content_type_id, true, n.published_at, n.author_id, p.score
      from new_rows n
      join old_rows o on o.id = n.id
      join search_documents d on d.entry_id = n.id
      cross join lateral vitrine_document_postings(d.document) p
      where n.status = 'published'
        and o.status <> 'published'
        and d.posted;
    end if;
    -- Published before and after, another type, date or author: the entry's postings change.
    if moved then
      update search_postings p
      set content_type_id = n.content_type_id, published_at = n.published_at, author_id = n.author_id
      from new_rows n
      join old_rows o on o.id = n.id
      join search_documents d on d.entry_id = n.id
      cross join lateral unnest(d.document) u
      where o.status = 'published'
        and n.status = 'published'
        and (o.content_type_id, o.published_at, o.author_id) is distinct from (n.content_type_id, n.published_at, n.author_id)
        and d.posted
        and p.language_code = d.language_code
        and p.lexeme = u.lexeme
        and p.entry_id = d.entry_id;
    end if;
  elsif tg_op = 'DELETE' then
    delete from entry_guards g
    using old_rows o
    where g.entry_id = o.id;
  end if;
  return null;
end
$$;
