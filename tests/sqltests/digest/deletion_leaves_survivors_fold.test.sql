-- Invariant 4: deleting events (plain DELETE of copies, close_stream of own events) leaves each
-- bucket holding exactly the fold of its survivors; an emptied bucket keeps a (0, 0, 0) row.
begin;
select plan(9);
select streamseal.set_service_name('digest-deletion');

select streamseal.ingest(array(
    select streamseal_test.copy('del-src', n, n, 'sx', n, event_id => streamseal_test.uid(n))
    from generate_series(1, 8) n order by n));
select streamseal.ingest(array[
    streamseal_test.copy('del-src', 21, 21, 'sy', 1, event_id => streamseal_test.uid(21)),
    streamseal_test.copy('del-src', 22, 22, 'sy', 2, event_id => streamseal_test.uid(22))]);
select streamseal.append(array(
    select streamseal_test.own('own-s', n - 10, event_id => streamseal_test.uid(n))
    from generate_series(11, 14) n order by n));
select streamseal.stamp();

delete from streamseal.events where event_id in (streamseal_test.uid(2), streamseal_test.uid(5), streamseal_test.uid(8));
delete from streamseal.events where event_id = streamseal_test.uid(1);
delete from streamseal.events where origin = 'del-src' and stream_id = 'sy';
select is(streamseal.close_stream('t1', 'own-s', 3), 2::bigint, 'close_stream removes versions 1 and 2 of own-s');

select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'del-src' and stream_id = 'sx' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(3), streamseal_test.uid(4), streamseal_test.uid(6), streamseal_test.uid(7)]) u $$,
    'the copies'' bucket is the fold of the 4 survivors after plain DELETEs');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'digest-deletion' and stream_id = 'own-s' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(13), streamseal_test.uid(14)]) u $$,
    'the own stream''s bucket is the fold of the 2 survivors after close_stream');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'del-src' and stream_id = 'sy' $$,
    $$ values (0::bigint, 0::bigint, 0::bigint) $$,
    'a bucket whose every event was deleted keeps its row at (0, 0, 0)');

select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'del-src' and stream_id = 'sx' $$,
    $$ select x0, x1, n from streamseal.recompute_digests('del-src') where stream_id = 'sx' $$,
    'the copies'' bucket equals recompute_digests');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'digest-deletion' and stream_id = 'own-s' $$,
    $$ select x0, x1, n from streamseal.recompute_digests('digest-deletion') where stream_id = 'own-s' $$,
    'the own bucket equals recompute_digests');
select is_empty(
    $$ select * from streamseal.recompute_digests('del-src') where stream_id = 'sy' $$,
    'the emptied bucket has nothing to recompute');
select is(streamseal_test.digest_drift(), 0::bigint, 'no bucket drifts from a recompute');
select bag_eq(
    $$ select event_id from streamseal.events where origin in ('del-src', 'digest-deletion') $$,
    $$ values (streamseal_test.uid(3)), (streamseal_test.uid(4)), (streamseal_test.uid(6)), (streamseal_test.uid(7)),
              (streamseal_test.uid(13)), (streamseal_test.uid(14)) $$,
    'exactly the expected survivors remain');

select * from finish();
rollback;
