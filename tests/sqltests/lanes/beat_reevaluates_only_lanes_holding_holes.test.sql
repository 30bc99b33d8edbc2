-- Invariants 1 and 6, liveness (issue 21 item 3): quiet pairs are no longer checkpointed, so the
-- origin's beat (one per round) re-evaluates this consumer's lanes of that origin that hold
-- holes, as a heartbeat on each used to: a tail loss suspected by the window that announced it
-- is confirmed by the next beat, and a confirmed hole stays offered for request while its pair is
-- quiet. Lanes with nothing outstanding are not touched (the beat costs the damage, not the
-- pairs), no lane is created, no hole is announced twice. A pair quiet for several rounds and
-- active again is still confirmed at first sight when ordered: type_seqs are dense per pair, so
-- its next window follows the last type_seq it announced (no false "missed round").
begin;
select plan(8);
select streamseal.set_service_name('lane-beat');
select streamseal.subscribe_all_tenants(array['beat.type', 'beat.other'], 'beat-origin');

-- t1 emitted 1..5 and 5 was lost; t2 and (t1, beat.other) are whole.
select streamseal.ingest(array(
    select streamseal_test.copy('beat-origin', i, i, 'bt', i, 'beat.type', 't1', event_id => streamseal_test.uid(i))
    from generate_series(1, 4) i));
select streamseal.ingest(array(
    select streamseal_test.copy('beat-origin', 10 + i, i, 'bw', i, 'beat.type', 't2', event_id => streamseal_test.uid(10 + i))
    from generate_series(1, 3) i));
select streamseal.ingest(array(
    select streamseal_test.copy('beat-origin', 20 + i, i, 'bo', i, 'beat.other', 't1', event_id => streamseal_test.uid(20 + i))
    from generate_series(1, 2) i));
select results_eq(
    $$ select tenant, floor, suspected from streamseal.verify_checkpoint('beat-origin', 1, 30, 'beat.type', array['t1', 't2'],
           array[5, 3]::bigint[], array[1, 1]::bigint[], array[5, 3]::bigint[], array['{}', '{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 4::bigint, '{[5,6)}'::int8multirange), ('t2', 3, '{}') $$,
    'fixture: the window announcing t1''s 1..5 leaves 5 suspected; t2 is whole');
select is((select count(*) from streamseal.verify_checkpoint('beat-origin', 1, 30, 'beat.other', array['t1'],
           array[2]::bigint[], array[1]::bigint[], array[2]::bigint[], array['{}']::int8multirange[]) where floor = 2)::int, 1,
    'fixture: (t1, beat.other) is whole');

select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_beat('beat-origin', 30, 30) $$,
    $$ values ('t1'::text, 'beat.type'::text, 4::bigint, '{}'::int8multirange, '{[5,6)}'::int8multirange,
               '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange) $$,
    'the next beat confirms the tail loss of the quiet pair and returns it to request; whole lanes are not evaluated');
select results_eq(
    $$ select tenant, confirmed, newly_confirmed, to_request from streamseal.verify_beat('beat-origin', 30, 30) $$,
    $$ values ('t1'::text, '{[5,6)}'::int8multirange, '{}'::int8multirange, '{[5,6)}'::int8multirange) $$,
    'a further beat keeps it confirmed and offered for request, never announced as new again');
select is((select count(*) from streamseal.lanes where origin = 'beat-origin')::int, 3,
    'beats create no lane');

-- t2 stays quiet over the beats, then is active again with 4..6, lacking 5, order proven.
select streamseal.ingest(array(
    select streamseal_test.copy('beat-origin', 40 + i, i, 'bw', i, 'beat.type', 't2', event_id => streamseal_test.uid(40 + i))
    from generate_series(4, 6) i where i <> 5));
select results_eq(
    $$ select tenant, floor, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('beat-origin', 40, 50, 'beat.type', array['t2'],
           array[3]::bigint[], array[4]::bigint[], array[6]::bigint[], array['{}']::int8multirange[], ordered => true) $$,
    $$ values ('t2'::text, 4::bigint, '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange) $$,
    'a pair quiet for several rounds and active again is confirmed at first sight when ordered: its window follows its last type_seq');

-- An origin this consumer holds no holes of: the beat evaluates nothing.
select is_empty($$ select * from streamseal.verify_beat('other-origin', 0, 0) $$,
    'a beat of an origin with no lane holding holes returns nothing');
select throws_ok($$ select * from streamseal.verify_beat('lane-beat', 0, 0) $$, '22023', null,
    'a beat claiming this service is refused');

select * from finish();
rollback;
