-- Invariants 4 and 10: a close-the-books truncation is recorded on the origin (stream_closes),
-- and a consumer applies an origin's announced closes to its copies once per floor; copies of
-- other streams and other origins are untouched.
begin;
select plan(7);
select streamseal.set_service_name('closes-consumer');

-- The origin side, recorded as close_stream would: origin rows are not needed for the record.
select streamseal.ingest(array(
    select streamseal_test.copy('closes-origin', i, i, 's' || (i % 2), i / 2 + 1)
    from generate_series(1, 10) i));
select streamseal.ingest(array[streamseal_test.copy('other-origin', 1, 1, 's0', 1)]);

select is(streamseal.apply_stream_closes('closes-origin',
    '[{"tenant":"t1","stream_id":"s0","below_version":4}]'::jsonb), 2::bigint,
    'the copies of s0 below version 4 are removed (s0 holds versions 2..6: 2 and 3 go)');
select is((select count(*)::int from streamseal.events where origin = 'closes-origin'), 8,
    'the other copies of the origin stay');
select is((select count(*)::int from streamseal.events where origin = 'other-origin'), 1,
    'another origin''s copy of a stream with the same name stays');
select is(streamseal.apply_stream_closes('closes-origin',
    '[{"tenant":"t1","stream_id":"s0","below_version":4}]'::jsonb), 0::bigint,
    'the same floor applied again removes nothing');
select is(streamseal_test.digest_drift(), 0::bigint, 'the digests follow the removal exactly');
select throws_ok($$ select streamseal.apply_stream_closes('closes-consumer', '[]') $$, '22023',
    'apply_stream_closes: origin ''closes-consumer'' is invalid: expected another service',
    'a service cannot apply closes to its own lane');

select streamseal.close_stream('t1', 'own-stream', 5);
select streamseal.close_stream('t1', 'own-stream', 3);
select streamseal.close_stream('t1', 'whole');
select results_eq(
    $$ select stream_id, below_version from streamseal.stream_closes order by stream_id $$,
    $$ values ('own-stream'::text collate "C", 5::bigint), ('whole', 9223372036854775807) $$,
    'close_stream records the highest floor per stream; a whole-stream close records the largest version');

select * from finish();
rollback;
