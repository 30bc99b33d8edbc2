-- Invariant 15 (readers never skip; a token never allows a skip), with 1 and 6: a pair's first
-- checkpoint [1, 10] (round R1) fails verification and waits in checkpoint_inbox to be retried;
-- R2's checkpoint [11, 20] is verified first and births the lane at 10. While the store holds
-- R1's checkpoint unverified, R1's listed pair keeps the origin's lane-set mark at R1's start and
-- the feed certifies nothing past R1's window (type_seqs 1..10 were never checked: 3 is lost).
-- Verified late, R1's checkpoint lowers the birth, names 3, and the mark moves on. When the store
-- holds NO trace of R1's checkpoint (its recording failed and the broker redelivers it later, or
-- a replica fetched it and has not committed it), a lane born above R1's window (birth_floor >=
-- R1's last) still holds the mark, for as long as the broker can still deliver R1 (the hold,
-- _lane_rounds_hold: 15 minutes from when the store first saw the pair held), then the next beat
-- moves it on (a checkpoint that never comes costs a bounded delay of certification, never a
-- stall). This reverses the check "R1 never in the store: the mark moves on" (issue 17, migration
-- 042). So does one that leaves the inbox unverified (refused, given up): held for the bound. A
-- lane born by the round itself (birth_floor < last) never waits.
begin;
select plan(24);
select streamseal.set_service_name('retry-reader');
select streamseal.subscribe_all_tenants(array['retry.a'], 'retry-origin');
select streamseal.subscribe_all_tenants(array['retry.a'], 'never-origin');
select streamseal.subscribe_all_tenants(array['retry.a'], 'drop-origin');
select streamseal.observe_origin(o, 'x', 60, 0, 0) from unnest(array['retry-origin', 'never-origin', 'drop-origin']) o;

-- Each origin emitted retry.a type_seqs 1..20 at origin_seqs 1..20; this store lacks 3.
select streamseal.ingest(array(
    select streamseal_test.copy(o, i, i, 's-' || o, i, 'retry.a', 't1')
    from unnest(array['retry-origin', 'never-origin', 'drop-origin']) o, generate_series(1, 20) i
    where i <> 3));

-- R1's checkpoint [1, 10] is recorded by the inbox; its verification fails and is rescheduled.
select streamseal.checkpoint_inbox_record(array['retry-origin'], array['streamseal.evt.retry-origin.t1.retry~2Ea'],
    array['\x7b7d']::bytea[], array[1]::bigint[], array[10]::bigint[], array[true], true, 100,
    array['t1'], array['retry.a']);
update streamseal.checkpoint_inbox set attempts = 1, not_before = now() + interval '1 minute'
where origin = 'retry-origin';
select is(streamseal.record_lane_round('retry-origin', '2026-01-01 00:00:01+00', 1, 11, 1, 1,
                                       array['t1'], array['retry.a'], array[10]::bigint[]),
          1::bigint, 'fixture: R1''s beat lists the pair, which has no lane yet: the mark waits at R1''s start');

-- R2's checkpoint [11, 20] is verified first: the lane is born at 10, announced through 20.
select streamseal.verify_checkpoint('retry-origin', 11, 21, 'retry.a', array['t1'], array[10]::bigint[], array[11]::bigint[],
                                    array[20]::bigint[], array['{}']::int8multirange[]);
select is(streamseal.record_lane_round('retry-origin', '2026-01-01 00:00:02+00', 11, 21, 1, 1,
                                       array['t1'], array['retry.a'], array[20]::bigint[]),
          1::bigint, 'R1''s checkpoint waiting in the inbox keeps the mark at R1''s start, though the lane was announced through 20');
select is(streamseal._feed_lane_bound('retry-origin', null, null), 1::bigint,
          'the feed certifies nothing of R1''s window: type_seqs 1..10 (3 lost) were never checked');
select is(streamseal.record_lane_round('retry-origin', '2026-01-01 00:00:03+00', 21, 21, 1, 1, '{}', '{}', '{}'),
          1::bigint, 'a later beat does not move the mark while R1''s checkpoint waits');

-- R1's checkpoint is verified late and leaves the inbox (as the inbox's verifier removes it).
select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('retry-origin', 1, 11, 'retry.a', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (2::bigint, '{[3,4)}'::int8multirange) $$,
    'fixture: R1''s checkpoint verified late lowers the birth and names 3');
delete from streamseal.checkpoint_inbox where origin = 'retry-origin';
select is((select lanes_announced_through from streamseal.known_origins where origin = 'retry-origin'), 21::bigint,
          'verified, R1''s checkpoint no longer holds the mark: it moves over every round recorded');
select is(streamseal._feed_lane_bound('retry-origin', null, null), 3::bigint,
          'the feed certifies up to the hole at 3 (one past origin_seq 2), never past it');

-- never-origin: R1's checkpoint never reached this store. R2's is verified first.
select streamseal.record_lane_round('never-origin', '2026-01-01 00:00:01+00', 1, 11, 1, 1,
                                    array['t1'], array['retry.a'], array[10]::bigint[]);
select streamseal.verify_checkpoint('never-origin', 11, 21, 'retry.a', array['t1'], array[10]::bigint[], array[11]::bigint[],
                                    array[20]::bigint[], array['{}']::int8multirange[]);
select is((select lanes_announced_through from streamseal.known_origins where origin = 'never-origin'), 1::bigint,
          'R1 never in the store, its lane born above R1''s window (birth 10 >= last 10): the mark stays at R1''s start (was: moved on)');
select is((select held_since from streamseal.lane_round_pairs where origin = 'never-origin'), now(),
          'the pair is held from when the store first saw its lane born above it (the database''s clock)');
select is(streamseal.record_lane_round('never-origin', '2026-01-01 00:00:02+00', 11, 21, 1, 1,
                                       array['t1'], array['retry.a'], array[20]::bigint[]),
          1::bigint, 'R2''s beat does not move it while the broker can still deliver R1''s checkpoint');
select is(streamseal._feed_lane_bound('never-origin', null, null), 1::bigint,
          'the feed certifies nothing of R1''s window (3 lost, never checked)');
update streamseal.lane_round_pairs set held_since = now() - streamseal._lane_rounds_hold() + interval '1 second'
where origin = 'never-origin';
select is(streamseal.record_lane_round('never-origin', '2026-01-01 00:00:03+00', 21, 21, 1, 1, '{}', '{}', '{}'),
          1::bigint, 'a second short of the bound, a beat still does not move the mark');
update streamseal.lane_round_pairs set held_since = now() - streamseal._lane_rounds_hold() - interval '1 second'
where origin = 'never-origin';
select is(streamseal._feed_lane_bound('never-origin', null, null), 1::bigint,
          'past the bound the mark does not move by itself: it waits for a beat');
select is(streamseal.record_lane_round('never-origin', '2026-01-01 00:00:04+00', 21, 21, 1, 1, '{}', '{}', '{}'),
          21::bigint, 'past the bound the next beat moves the mark over R1 and R2 (no stall: more replay, never a skip)');
select is((select count(*)::int from streamseal.lane_round_pairs where origin = 'never-origin'), 0,
          'no pair is left waiting');

-- drop-origin: R2's checkpoint is verified while R1's waits; both beats are recorded after.
select streamseal.checkpoint_inbox_record(array['drop-origin'], array['streamseal.evt.drop-origin.t1.retry~2Ea'],
    array['\x7b7d']::bytea[], array[1]::bigint[], array[10]::bigint[], array[true], true, 100,
    array['t1'], array['retry.a']);
select streamseal.verify_checkpoint('drop-origin', 11, 21, 'retry.a', array['t1'], array[10]::bigint[], array[11]::bigint[],
                                    array[20]::bigint[], array['{}']::int8multirange[]);
select is(streamseal.record_lane_round('drop-origin', '2026-01-01 00:00:01+00', 1, 11, 1, 1,
                                       array['t1'], array['retry.a'], array[10]::bigint[]),
          1::bigint, 'a beat recorded after the later checkpoint was verified still waits for the earlier one in the inbox');
select is(streamseal.record_lane_round('drop-origin', '2026-01-01 00:00:02+00', 11, 21, 1, 1,
                                       array['t1'], array['retry.a'], array[20]::bigint[]),
          1::bigint, 'so does the next round');
-- R1's checkpoint leaves the inbox unverified (refused, or given up after its attempts).
delete from streamseal.checkpoint_inbox where origin = 'drop-origin';
select is(streamseal.record_lane_round('drop-origin', '2026-01-01 00:00:03+00', 21, 21, 1, 1, '{}', '{}', '{}'),
          1::bigint, 'gone unverified, the checkpoint leaves the lane born above R1''s window: the mark stays for the bound (was: moved on)');
update streamseal.lane_round_pairs set held_since = now() - streamseal._lane_rounds_hold() - interval '1 second'
where origin = 'drop-origin';
select is(streamseal.record_lane_round('drop-origin', '2026-01-01 00:00:04+00', 21, 21, 1, 1, '{}', '{}', '{}'),
          21::bigint, 'past the bound the next beat moves the mark on (no stall)');
select is((select count(*)::int from streamseal.lane_round_pairs where origin = 'drop-origin'), 0,
          'no pair is left waiting');

-- now-origin: the normal case. R1's checkpoint births the lane below R1's last (birth 0 < 10):
-- no wait at all, whichever of beat and checkpoint comes first.
select streamseal.observe_origin('now-origin', 'x', 60, 0, 0);
select streamseal.subscribe_all_tenants(array['retry.a'], 'now-origin');
select streamseal.ingest(array(select streamseal_test.copy('now-origin', i, i, 's-now', i, 'retry.a', 't1')
                               from generate_series(1, 20) i));
select streamseal.record_lane_round('now-origin', '2026-01-01 00:00:01+00', 1, 11, 1, 1,
                                    array['t1'], array['retry.a'], array[10]::bigint[]);
select streamseal.verify_checkpoint('now-origin', 1, 11, 'retry.a', array['t1'], array[10]::bigint[], array[1]::bigint[],
                                    array[10]::bigint[], array['{}']::int8multirange[]);
select is((select lanes_announced_through from streamseal.known_origins where origin = 'now-origin'), 11::bigint,
          'a lane born by the round itself: its verification moves the mark over the round at once');
select streamseal.verify_checkpoint('now-origin', 11, 21, 'retry.a', array['t1'], array[10]::bigint[], array[11]::bigint[],
                                    array[20]::bigint[], array['{}']::int8multirange[]);
select is(streamseal.record_lane_round('now-origin', '2026-01-01 00:00:02+00', 11, 21, 1, 1,
                                       array['t1'], array['retry.a'], array[20]::bigint[]),
          21::bigint, 'a beat recorded after its lane was announced (born below) moves the mark at once');
select is((select count(*)::int from streamseal.lane_round_pairs where origin = 'now-origin'), 0,
          'nothing held in the normal case');

-- The bound: the longest the broker can still deliver a checkpoint after its first delivery
-- (lane_rounds.sql derives it; TestLaneRoundsHoldCoversTheRedeliveryHorizon checks it against
-- controlplane/inbox's and wire's numbers).
select is(streamseal._lane_rounds_hold(), interval '15 minutes', 'the hold is 15 minutes');

select * from finish();
rollback;
