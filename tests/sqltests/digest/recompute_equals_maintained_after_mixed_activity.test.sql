-- Invariant 4: whichever way rows are written, rewritten or removed (append, stamp, ingest from
-- two origins, plain INSERT, reclassification, metadata and identity UPDATEs, DELETE,
-- close_stream), the maintained digests equal a recompute from the store.
begin;
select plan(6);
select streamseal.set_service_name('digest-mixed');

-- Own events, stamped.
select streamseal.append(array[
    streamseal_test.own('s1', 1, 'a.done', 't1', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 'a.done', 't1', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s2', 1, 'b.done', 't2', event_id => streamseal_test.uid(4)),
    streamseal_test.own('s1', 3, 'a.done', 't1', event_id => streamseal_test.uid(3)),
    streamseal_test.own('s2', 2, 'b.done', 't2', event_id => streamseal_test.uid(5))]);
select streamseal.stamp();

-- Copies from two origins.
select streamseal.ingest(array(
    select streamseal_test.copy('mix-a', n - 10, n - 10, 'a1', n - 10, 'a.done', 't1', event_id => streamseal_test.uid(n))
    from generate_series(11, 14) n order by n));
select streamseal.ingest(array[
    streamseal_test.copy('mix-b', 1, 1, 'b1', 1, 'a.done', 't1', event_id => streamseal_test.uid(21)),
    streamseal_test.copy('mix-b', 2, 2, 'b1', 2, 'a.done', 't1', event_id => streamseal_test.uid(22)),
    streamseal_test.copy('mix-b', 3, 3, 'b1', 3, 'a.done', 't1', event_id => streamseal_test.uid(23)),
    streamseal_test.copy('mix-b', 4, 1, 'b2', 1, 'b.done', 't2', event_id => streamseal_test.uid(24))]);

-- Own events by plain INSERT, then one more append, all stamped.
insert into streamseal.events (event_id, origin, tenant, stream_id, stream_version, event_type, payload)
values (streamseal_test.uid(6), 'digest-mixed', 't1', 's1', 4, 'a.done', '\x01'),
       (streamseal_test.uid(7), 'digest-mixed', 't1', 's3', 1, 'a.done', '\x02');
select streamseal.append(array[streamseal_test.own('s2', 3, 'b.done', 't2', event_id => streamseal_test.uid(8))]);
select streamseal.stamp();

-- Reclassify: an own event and a copy become ephemeral; the own one is restored.
update streamseal.events set flags = flags | 1 where event_id in (streamseal_test.uid(2), streamseal_test.uid(12));
update streamseal.events set flags = flags & ~1 where event_id = streamseal_test.uid(2);
-- Metadata only.
update streamseal.events set metadata = '{"note": "touched"}' where origin = 'mix-b';
-- Identity rewrite: a copy moves to another stream.
update streamseal.events set stream_id = 'b3' where event_id = streamseal_test.uid(23);
-- Plain DELETEs of a copy and a stamped own event.
delete from streamseal.events where event_id in (streamseal_test.uid(13), streamseal_test.uid(4));
select is(streamseal.close_stream('t1', 's1', 3), 2::bigint, 'close_stream removes s1 versions 1 and 2');
-- An unstamped own event is left pending.
select streamseal.append(array[streamseal_test.own('s3', 2, 'a.done', 't1', event_id => streamseal_test.uid(9))]);

select is(streamseal_test.digest_drift(), 0::bigint, 'verify_stream_digests finds no drift after the mixed workload');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests where (x0, x1, n) <> (0, 0, 0) $$,
    $$ select * from streamseal.recompute_digests() $$,
    'every non-empty maintained bucket equals recompute_digests, and no bucket is missing');
select results_eq(
    $$ select origin, tenant, event_type, stream_id, n from streamseal.stream_digests
       where (x0, x1, n) <> (0, 0, 0) order by 1, 2, 3, 4 $$,
    $$ values ('digest-mixed', 't1', 'a.done', 's1' collate "C", 2::bigint), ('digest-mixed', 't1', 'a.done', 's3', 1),
              ('digest-mixed', 't2', 'b.done', 's2', 2),
              ('mix-a', 't1', 'a.done', 'a1', 2),
              ('mix-b', 't1', 'a.done', 'b1', 2), ('mix-b', 't1', 'a.done', 'b3', 1), ('mix-b', 't2', 'b.done', 'b2', 1) $$,
    'each bucket counts exactly the expected survivors');
select results_eq(
    $$ select x0, x1 from streamseal.stream_digests where origin = 'mix-a' and stream_id = 'a1' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1))
       from unnest(array[streamseal_test.uid(11), streamseal_test.uid(14)]) u $$,
    'the mix-a bucket folds exactly the copies neither deleted nor ephemeral');
select results_eq(
    $$ select x0, x1 from streamseal.stream_digests where origin = 'digest-mixed' and stream_id = 's1' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1))
       from unnest(array[streamseal_test.uid(3), streamseal_test.uid(6)]) u $$,
    'the own s1 bucket folds exactly its appended and plainly inserted survivors');

select * from finish();
rollback;
