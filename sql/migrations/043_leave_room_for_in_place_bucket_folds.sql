-- Issues 16 and 18 (ingest cost), invariant 8: every digest fold rewrites each stream_digests
-- bucket its batch touches, and steady copies touch the same buckets batch after batch. The
-- rewrite changes no indexed column, so it can be a HOT update (no index entries, the page prunes
-- its own dead versions) when the bucket's page has room for the new version. At the default
-- fillfactor (100) the pages held only live buckets: measured 0 of 17 700 updates HOT, 300 live
-- buckets spread over 1.9 MB, and the bucket upserts a third of a 500-copy ingest's backend CPU.
-- At 50 a page keeps room to rewrite every bucket on it once before pruning: all updates after
-- the first HOT, the table stays at 72 kB, and the ingest costs ~17% less. The price: the table is
-- up to twice the size of its live rows. Existing pages are not rewritten (that would need an
-- exclusive lock): pages filled from now on, and space vacuum frees, keep the room.
alter table streamseal.stream_digests set (fillfactor = 50);

---- create above / drop below ----

alter table streamseal.stream_digests reset (fillfactor);
