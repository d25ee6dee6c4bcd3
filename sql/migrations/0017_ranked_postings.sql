-- 0017: a one-word search's first page read in rank order (C42, C55; sql/search-structure.md).
--
-- A word in 10% of a million short entries has 97 000 postings. Counting them (C43) reads them all,
-- once; ranking them all to give 20 read them a second time, through a sort. These indexes hold the
-- postings of a word (and the entries of three letters, 0016) in the order a page by relevance asks:
-- rank, then list order (C11), so that a page reads its own rows, and the count is the one full read.

create index search_postings_ranked on search_postings
  (language_code, lexeme collate "C", content_type_id, (score::real) desc, published_at desc nulls last, entry_id desc)
  include (score, published, author_id);

create index search_prefixes_ranked on search_prefixes
  (language_code, prefix, content_type_id, (coalesce(exact::real, (-1 / (1 + score::real::float8))::real)) desc, published_at desc nulls last, entry_id desc)
  include (score, exact, published, author_id);
