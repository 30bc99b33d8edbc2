-- Invariant 8 for checkpoints (a verification costs the open part of a lane, not its history):
-- what a lane accepts (at-most-once occurrences, losses the origin cannot serve) matters only
-- above its floor, so the working set keeps only that part; a lane with one at-most-once
-- occurrence in every other event would otherwise carry (and rewrite, and subtract) one range
-- per occurrence forever (measured: 150 ms a verification at 100 000 ranges instead of 1 ms).
-- Losses accepted for an origin's answer stay on record in accepted_losses.
begin;
select plan(5);
select streamseal.set_service_name('amo-lane-consumer');
select streamseal.subscribe_all_tenants(array['tick.fired'], 'amo-lane-origin');

-- type_seqs 1..20: the even ones were at-most-once occurrences, never delivered; the odd ones held.
select count(*) from (select streamseal.ingest(array(
    select streamseal_test.copy('amo-lane-origin', i, i, 's' || i, 1, 'tick.fired') from generate_series(1, 20, 2) i))) x;
select count(*) from streamseal.verify_checkpoint('amo-lane-origin', 1, 21, 'tick.fired', array['t1'], array[10::bigint],
    array[1::bigint], array[20::bigint],
    array[(select range_agg(int8range(i, i + 1)) from generate_series(2, 20, 2) i)]);

select results_eq(
    $$ select floor, accepted from streamseal.lanes where origin = 'amo-lane-origin' $$,
    $$ values (20::bigint, '{}'::int8multirange) $$,
    'the floor passed every occurrence, and the working set forgot them');

-- 21..30 announced, 25 and 27 never delivered and not occurrences: holes. 22 is an occurrence.
select count(*) from (select streamseal.ingest(array(
    select streamseal_test.copy('amo-lane-origin', i, i, 's' || i, 1, 'tick.fired')
    from generate_series(21, 30) i where i not in (22, 25, 27)))) x;
select count(*) from streamseal.verify_checkpoint('amo-lane-origin', 21, 31, 'tick.fired', array['t1'], array[9::bigint],
    array[21::bigint], array[30::bigint], array['{[22,23)}'::int8multirange]);
select results_eq(
    $$ select floor, accepted, suspected from streamseal.lanes where origin = 'amo-lane-origin' $$,
    $$ values (24::bigint, '{}'::int8multirange, '{[25,26),[27,28)}'::int8multirange) $$,
    'the floor stops below the first hole; the occurrence below it is forgotten');

-- The origin answers that 25 is absent: accepted, on record, and forgotten once the floor passes.
select streamseal.accept_loss('amo-lane-origin', 't1', 'tick.fired', '{[25,26)}', 'absent');
select results_eq(
    $$ select floor, accepted, accepted_losses from streamseal.lanes where origin = 'amo-lane-origin' $$,
    $$ values (26::bigint, '{}'::int8multirange, '{[25,26)}'::int8multirange) $$,
    'the accepted loss moves the floor to the next hole and stays on record in accepted_losses');

-- An occurrence above a hole is kept until the floor passes it.
select count(*) from streamseal.verify_checkpoint('amo-lane-origin', 31, 33, 'tick.fired', array['t1'], array[0::bigint],
    array[31::bigint], array[32::bigint], array['{[31,33)}'::int8multirange]);
select results_eq(
    $$ select floor, accepted from streamseal.lanes where origin = 'amo-lane-origin' $$,
    $$ values (26::bigint, '{[31,33)}'::int8multirange) $$,
    'an occurrence above the floor stays accepted while a hole (27) is below it');
select streamseal.accept_loss('amo-lane-origin', 't1', 'tick.fired', '{[27,28)}', 'absent');
select results_eq(
    $$ select floor, accepted, accepted_losses from streamseal.lanes where origin = 'amo-lane-origin' $$,
    $$ values (32::bigint, '{}'::int8multirange, '{[25,26),[27,28)}'::int8multirange) $$,
    'with the last hole accepted the floor passes everything announced and the working set is empty');

select * from finish();
rollback;
