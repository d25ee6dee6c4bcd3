-- The benchmark's data set: `:entries` entries over 3 content types and 3
-- languages with gaps, authors, images with and without variants, 1–5 terms
-- each; drafts, scheduled and embargoed entries; ties in published_at.
-- `:entries` is the number of entries: bench/dataset.ts puts it in before
-- sending (psql reads the same file with `-v entries=100000`).
-- About 10% of the entries are embargoed (published, with a publication time
-- up to a year ahead, almost all distinct): the live filter (C1) has to skip
-- them in list order. 2% are published with no publication time at all.
-- The filters' cases (C40–C42): the tag `popular` is carried by 10% of the
-- entries (id % 10 = 3), and the word "zeppelin" is in the English title of
-- 1% (id % 100 = 3: posts, as are the tag's).
insert into languages (code, name) values ('fr', 'Français'), ('de', 'Deutsch') on conflict (code) do nothing;
insert into content_types (slug, name) values ('recipe', 'Recipe') on conflict (slug) do nothing;

insert into authors (name) select 'Author ' || g from generate_series(1, 50) g;

insert into media (path, alt)
select case when g % 10 = 0 then 'https://images.example.com/' || g || '.jpg' else 'uploads/bench/' || g || '.jpg' end, 'Image ' || g
from generate_series(1, 2000) g;
insert into media_variants (media_id, name, path) select id, 'thumbnail', 'uploads/bench/' || id || '-thumbnail.jpg' from media where id % 3 <> 0;
insert into media_variants (media_id, name, path) select id, 'medium', 'uploads/bench/' || id || '-medium.jpg' from media where id % 2 = 0;

insert into taxonomies (slug, name) values ('category', 'Category'), ('tag', 'Tag') on conflict (slug) do nothing;
insert into terms (taxonomy_id, name, slug)
select (select id from taxonomies where slug = case when g <= 20 then 'category' else 'tag' end), 'Term ' || g, 'term-' || g
from generate_series(1, 200) g;
insert into terms (taxonomy_id, name, slug) select id, 'Popular', 'popular' from taxonomies where slug = 'tag';

insert into entries (content_type_id, status, published_at, created_at, author_id, featured_image_id)
select
  (select id from content_types where slug = case when g % 10 < 6 then 'post' when g % 10 < 8 then 'page' else 'recipe' end),
  case when g % 20 = 0 then 'draft' when g % 20 = 1 then 'scheduled' else 'published' end,
  case
    -- 9 shares no factor with 10 or 20: embargoed entries fall in every type, 1/9 of 90% published.
    when g % 9 = 4 then now() + interval '1 second' * (1 + (g::bigint * 7919) % 31536000)
    when g % 50 = 2 then null
    else now() - interval '1 minute' * (g / 3)
  end,
  now() - interval '1 minute' * (g / 3) - interval '1 day',
  case when g % 7 = 0 then null else g % 50 + 1 end,
  case when g % 4 = 0 then null else g % 2000 + 1 end
from generate_series(1, :entries) g;

insert into entry_translations (entry_id, language_code, title, slug, excerpt, meta_title, meta_description, body)
select e.id, l.code,
  initcap(l.code) || ' title of entry ' || e.id || case when l.code = 'en' and e.id % 100 = 3 then ' zeppelin' else '' end,
  case l.code when 'en' then 'entry-' when 'fr' then 'entree-' else 'eintrag-' end || e.id,
  'An excerpt of entry ' || e.id || ' in ' || l.code || ', long enough to look like a real one.',
  'Meta title ' || e.id,
  'Meta description of entry ' || e.id,
  repeat('Body text. ', 40)
from entries e
join languages l on (l.code = 'en' and e.id % 25 <> 0) or (l.code = 'fr' and e.id % 3 <> 0) or (l.code = 'de' and e.id % 2 = 0);

insert into entry_terms (entry_id, term_id, position)
select e.id, (e.id * 7 + k * 37) % 200 + 1, k
from entries e
cross join lateral generate_series(1, e.id % 5 + 1) k
on conflict do nothing;
insert into entry_terms (entry_id, term_id, position)
select e.id, (select id from terms where slug = 'popular'), 0
from entries e
where e.id % 10 = 3
on conflict do nothing;

insert into custom_fields (content_type_id, key, type)
select id, 'subtitle', 'text' from content_types where slug in ('post', 'recipe');
insert into field_values (entry_id, custom_field_id, language_code, value)
select e.id, f.id, case when e.id % 2 = 0 then 'fr' else null end, to_jsonb('Subtitle ' || e.id)
from entries e
join custom_fields f on f.content_type_id = e.content_type_id
where e.id % 3 = 0;
