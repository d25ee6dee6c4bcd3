-- The search benchmark's data set (bench/search.ts): `:entries` posts, each with an English
-- translation whose title (6 words), excerpt (16) and body (80) are drawn from a long-tailed
-- vocabulary: 50 000 made-up words (consonant-vowel syllables and a final `n`, so that no
-- stemmer changes them), the word of rank r drawn with a probability near 1 / r (Zipf). The
-- most frequent words are in most entries, most words in few. 2% of the entries are drafts and
-- 1% embargoed (published, a year ahead): the live filter (C1) has their matches to skip.
-- bench/search.ts finds, in a sample, the words carried by about 1% and 10% of the entries.
create function pg_temp.bench_syllable(d int) returns text
language sql
immutable
as $$ select substr('bdfgklmnprstvz', d / 5 + 1, 1) || substr('aeiou', d % 5 + 1, 1) $$;

-- Rank 1 to 69: one syllable; to 4 899: two; beyond: three.
create function pg_temp.bench_word(r int) returns text
language sql
immutable
as $$
  select pg_temp.bench_syllable(r % 70)
    || case when r >= 70 then pg_temp.bench_syllable(r / 70 % 70) else '' end
    || case when r >= 4900 then pg_temp.bench_syllable(r / 4900 % 70) else '' end
    || 'n'
$$;

create function pg_temp.bench_text(words int) returns text
language sql
volatile
as $$
  select string_agg(pg_temp.bench_word(floor(exp(random() * ln(50000)))::int), ' ')
  from generate_series(1, words)
$$;

insert into entries (id, content_type_id, status, published_at, created_at)
select
  g,
  (select id from content_types where slug = 'post'),
  case when g % 50 = 7 then 'draft' else 'published' end,
  case when g % 100 = 11 then now() + interval '1 day' * (1 + g % 365) else now() - interval '1 minute' * g end,
  now() - interval '1 minute' * g - interval '1 day'
from generate_series(1, :entries) g;

insert into entry_translations (entry_id, language_code, title, slug, excerpt, body)
select g, 'en', initcap(pg_temp.bench_text(6)), 'entry-' || g, pg_temp.bench_text(16), pg_temp.bench_text(80)
from generate_series(1, :entries) g;

select setval(pg_get_serial_sequence('entries', 'id'), :entries);
