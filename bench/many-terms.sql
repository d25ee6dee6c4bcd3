-- Added to bench/large-dataset.sql for the term lists' target (C46): the tag
-- taxonomy grows to 10 000 terms, and every second entry carries one of the
-- new tags (about 50 entries each, about 10% of them embargoed, some drafts).
insert into terms (taxonomy_id, name, slug)
select (select id from taxonomies where slug = 'tag'), 'Tag ' || g, 'tag-' || g
from generate_series(1, 10000 - (select count(*) from terms where taxonomy_id = (select id from taxonomies where slug = 'tag'))) g;

insert into entry_terms (entry_id, term_id, position)
select e.id, t.id, 10
from entries e
join terms t on t.slug = 'tag-' || ((e.id * 7919) % 9819 + 1)
where e.id % 2 = 0
  and t.taxonomy_id = (select id from taxonomies where slug = 'tag')
on conflict do nothing;
