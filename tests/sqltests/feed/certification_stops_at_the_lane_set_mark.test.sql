-- Invariant 15 (readers never skip), with 1 and 6: a copied origin is certified no further than
-- its lane-set mark (known_origins.lanes_announced_through). A round whose beat lists a new pair
-- (cert.b) that has no lane here yet (its first events were all lost, its checkpoint not
-- verified) holds the mark at the round's start, so the bound stays below the lost events however
-- far the other lanes reached; verifying the pair's checkpoint moves the mark over the round. A
-- lane whose floor reached what was announced to it certifies the mark, not its last event (a
-- quiet lane no longer pins its origin). An origin with no listed round keeps the old rule.
begin;
select plan(10);
select streamseal.set_service_name('cert-reader');
select streamseal.subscribe_all_tenants(array['cert.a', 'cert.b'], 'cert-origin');
select streamseal.subscribe_all_tenants(array['cert.a'], 'cert-old');
select streamseal.observe_origin('cert-origin', 'x', 60, 0, 0);

-- Round 1, [1, 2): cert.a's first event (origin_seq 1), held and verified.
select streamseal.ingest(array[streamseal_test.copy('cert-origin', 1, 1, 's1', 1, 'cert.a')]);
select streamseal.verify_checkpoint('cert-origin', 1, 2, 'cert.a', array['t1'], array[1]::bigint[], array[1]::bigint[],
                                    array[1]::bigint[], array['{}']::int8multirange[]);
select is(streamseal.record_lane_round('cert-origin', '2026-01-01 00:00:01+00', 1, 2, 1, 1,
                                       array['t1'], array['cert.a'], array[1]::bigint[]),
          2::bigint, 'the first listed round starts the mark at its window and, its lane announced, moves it over the window');

-- Round 2, [2, 5): cert.b's first two events (2, 3) are lost here; cert.a's second (4) is held
-- and its checkpoint verified first.
select streamseal.ingest(array[streamseal_test.copy('cert-origin', 4, 2, 's1', 2, 'cert.a')]);
select streamseal.verify_checkpoint('cert-origin', 2, 5, 'cert.a', array['t1'], array[1]::bigint[], array[2]::bigint[],
                                    array[2]::bigint[], array['{}']::int8multirange[]);
select is(streamseal.record_lane_round('cert-origin', '2026-01-01 00:00:02+00', 2, 5, 1, 1,
                                       array['t1', 't1'], array['cert.a', 'cert.b'], array[2, 2]::bigint[]),
          2::bigint, 'a round listing a pair with no lane here yet holds the mark at its start');
select is(streamseal._feed_lane_bound('cert-origin', null, null), 2::bigint,
          'the origin is certified no further than the mark: below the lost events at 2 and 3, though cert.a reached 4');

-- cert.b's checkpoint is verified: its lane is born holding holes 1 and 2.
select streamseal.verify_checkpoint('cert-origin', 2, 5, 'cert.b', array['t1'], array[2]::bigint[], array[1]::bigint[],
                                    array[2]::bigint[], array['{}']::int8multirange[]);
select is((select lanes_announced_through from streamseal.known_origins where origin = 'cert-origin'), 5::bigint,
          'verifying the waiting pair''s checkpoint moves the mark over the round');
select is(streamseal._feed_lane_bound('cert-origin', null, null), 1::bigint,
          'a lane holding holes pins its origin below them');

-- The repair lands; a beat re-evaluates the lane.
select streamseal.ingest(array[streamseal_test.copy('cert-origin', 2, 1, 's2', 1, 'cert.b'),
                               streamseal_test.copy('cert-origin', 3, 2, 's2', 2, 'cert.b')]);
select streamseal.verify_beat('cert-origin', 5, 5);
select is(streamseal._feed_lane_bound('cert-origin', null, null), 5::bigint,
          'complete lanes certify the mark: cert.b, quiet at origin_seq 3, no longer pins the origin at 4');
select is(streamseal._feed_lane_bound('cert-origin', array['cert.a'], null), 5::bigint,
          'a scope of one type is capped at the same mark');

-- An origin whose beats list nothing (an older binary): the lanes alone, as before.
select streamseal.observe_origin('cert-old', 'x', 60, 0, 0);
select streamseal.ingest(array[streamseal_test.copy('cert-old', 7, 1, 's1', 1, 'cert.a')]);
select streamseal.verify_checkpoint('cert-old', 1, 8, 'cert.a', array['t1'], array[1]::bigint[], array[1]::bigint[],
                                    array[1]::bigint[], array['{}']::int8multirange[]);
select is(streamseal._feed_lane_bound('cert-old', null, null), 8::bigint,
          'without a listed round an origin is certified by its lanes (one past the last event held at the floor)');

select throws_ok(
    $$ select streamseal.record_lane_round('cert-origin', '2026-01-01 00:00:03+00', 5, 6, 2, 1, '{}', '{}', '{}') $$,
    '22023', 'record_lane_round: part 2 of 1 is invalid: expected 1 <= part <= parts',
    'a part beyond the round''s parts is refused');
select throws_ok(
    $$ select streamseal.record_lane_round('cert-unknown', '2026-01-01 00:00:03+00', 5, 6, 1, 1, '{}', '{}', '{}') $$,
    '22023', 'record_lane_round: origin "cert-unknown" is unknown: observe it (observe_origin) before recording its rounds',
    'a round of an origin never observed is refused');

select * from finish();
rollback;
