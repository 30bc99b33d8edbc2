-- Invariant 1 (no silent loss), with 6 and 15: a lane's checkpoints can be verified out of order
-- (a failed verification retried after a later round's checkpoint of the same pair, or an inbox
-- recording reordered). When checkpoint [11, 20] births the lane before [1, 10] is verified, the
-- late earlier checkpoint lowers the birth to its own first type_seq - 1: what it announced below
-- the old birth is checked like a new window (held or named a hole: suspected, then confirmed by
-- the next checkpoint or beat), never left behind as history, and the feed's certification
-- falls back below the hole. A redelivery of the same checkpoint lowers nothing again.
begin;
select plan(12);
select streamseal.set_service_name('late-birth');
select streamseal.subscribe_all_tenants(array['late.type'], 'late-origin');

-- The origin emitted type_seqs 1..20 (origin_seq = type_seq); this store lacks 3 and 15, and the
-- at-most-once occurrence 5 never arrived.
select streamseal.ingest(array(
    select streamseal_test.copy('late-origin', i, i, 'l1', i, 'late.type', 't1', event_id => streamseal_test.uid(i))
    from generate_series(1, 20) i where i not in (3, 5, 15)));

-- The later round's checkpoint is verified first: it births the lane at 10.
select results_eq(
    $$ select floor, suspected, confirmed from streamseal.verify_checkpoint('late-origin', 11, 21, 'late.type', array['t1'],
           array[10]::bigint[], array[11]::bigint[], array[20]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (14::bigint, '{[15,16)}'::int8multirange, '{}'::int8multirange) $$,
    'fixture: checkpoint [11, 20] verified first births the lane at 10 and suspects 15');

-- The earlier round's checkpoint, verified late.
select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed from streamseal.verify_checkpoint('late-origin', 1, 11, 'late.type', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{[5,6)}']::int8multirange[]) $$,
    $$ values (2::bigint, '{[3,4)}'::int8multirange, '{[15,16)}'::int8multirange, '{[15,16)}'::int8multirange) $$,
    'the late checkpoint [1, 10] names 3 a suspected hole (not history) and the floor falls below it; 15 is confirmed');
select results_eq(
    $$ select floor, birth_floor, last_type_seq from streamseal.lanes
       where origin = 'late-origin' and tenant = 't1' and event_type = 'late.type' $$,
    $$ values (2::bigint, 0::bigint, 20::bigint) $$,
    'the lane''s birth is lowered to the late checkpoint''s first type_seq - 1; what was announced stays 20');
select results_eq(
    $$ select type_seqs, window_from, window_to from streamseal.loss_reports where origin = 'late-origin' $$,
    $$ values ('{[5,6)}'::int8multirange, 1::bigint, 11::bigint) $$,
    'the at-most-once occurrence 5 below the old birth is reported lost once, never a hole');
select is(streamseal._feed_lane_bound('late-origin', null, null), 3::bigint,
          'the feed certifies the origin no further than the event below the hole 3 (origin_seq 2)');

-- The next beat confirms 3: it is requested like any confirmed hole.
select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_beat('late-origin', 21, 21) $$,
    $$ values (2::bigint, '{}'::int8multirange, '{[3,4),[15,16)}'::int8multirange, '{[3,4)}'::int8multirange,
               '{[3,4),[15,16)}'::int8multirange) $$,
    'the next beat confirms 3 and offers it for request with 15');

-- The same late checkpoint redelivered: nothing is lowered or reported again.
select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed from streamseal.verify_checkpoint('late-origin', 1, 11, 'late.type', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{[5,6)}']::int8multirange[]) $$,
    $$ values (2::bigint, '{}'::int8multirange, '{[3,4),[15,16)}'::int8multirange, '{}'::int8multirange) $$,
    'a redelivered late checkpoint changes nothing');
select is((select count(*) from streamseal.loss_reports where origin = 'late-origin')::int, 1,
          'the redelivery reports the at-most-once loss no second time');

-- 3 is repaired: the floor moves up to the next hole, and the certification with it.
select streamseal.ingest(array[streamseal_test.copy('late-origin', 3, 3, 'l1', 3, 'late.type', 't1', event_id => streamseal_test.uid(3))]);
select results_eq(
    $$ select floor, confirmed from streamseal.verify_beat('late-origin', 21, 21) $$,
    $$ values (14::bigint, '{[15,16)}'::int8multirange) $$,
    'the repaired 3 clears and the floor stops below 15');
select is(streamseal._feed_lane_bound('late-origin', null, null), 15::bigint,
          'the certification follows the floor up to the event below 15');

-- A checkpoint whose first type_seq lies above the birth lowers nothing.
select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('late-origin', 11, 21, 'late.type', array['t1'],
           array[10]::bigint[], array[11]::bigint[], array[20]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (14::bigint, '{}'::int8multirange) $$,
    'the later checkpoint redelivered lowers nothing');
select results_eq(
    $$ select floor, birth_floor from streamseal.lanes where origin = 'late-origin' and tenant = 't1' $$,
    $$ values (14::bigint, 0::bigint) $$,
    'the birth stays where the earliest verified checkpoint put it');

select * from finish();
rollback;
