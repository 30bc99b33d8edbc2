-- Invariant 8 (bounded cost), issues 16 and 18: a digest fold rewrites every bucket a batch
-- touches, and a steady stream of copies touches the same buckets batch after batch. Those
-- rewrites change no indexed column, so they can be HOT (heap-only: no index entries, and the
-- page prunes its own dead versions), but only if the bucket's page has room for the new
-- version. At fillfactor 100 the pages were full of live buckets, no update was HOT, every fold
-- wrote index entries for every bucket and stream_digests grew without bound until vacuum
-- (measured: 0 of 17 700 updates HOT, 300 live buckets in 1.9 MB; a third of a 500-copy
-- ingest's cost). Invariant 4 still holds: the folds stay exact (last test).
begin;
select plan(3);
select streamseal.set_service_name('digest-hot');

-- 300 buckets, one copy each, then a second copy into each of the same 300 buckets.
select streamseal.ingest(array(
    select streamseal_test.copy('hot-src', n, n, 'hs-' || n, 1) from generate_series(1, 300) n order by n));
select n_tup_upd as upd0, n_tup_hot_upd as hot0 from pg_stat_xact_user_tables
where relid = 'streamseal.stream_digests'::regclass \gset
select streamseal.ingest(array(
    select streamseal_test.copy('hot-src', 300 + n, 300 + n, 'hs-' || n, 2) from generate_series(1, 300) n order by n));

select is((select n_tup_upd - :upd0 from pg_stat_xact_user_tables where relid = 'streamseal.stream_digests'::regclass),
          300::bigint, 'the second batch updated each of its 300 buckets once');
select cmp_ok((select n_tup_hot_upd - :hot0 from pg_stat_xact_user_tables where relid = 'streamseal.stream_digests'::regclass),
              '>=', 270::bigint, 'at least 90% of those bucket updates were HOT (in place, no index entries)');
select results_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where origin = 'hot-src' order by stream_id $$,
    $$ select origin, tenant, event_type, stream_id collate "C", x0, x1, n from streamseal.recompute_digests('hot-src') order by stream_id $$,
    'the maintained buckets still equal the recomputed fold (invariant 4)');

select * from finish();
rollback;
