-- Invariant 1: the last event before a quiet period is lost. No later event will ever reveal the
-- hole, so the next checkpoint, empty as it is, must confirm it: a heartbeat re-evaluates a
-- known lane up to the highest type_seq already announced. It is confirmed once, not again at
-- every quiet checkpoint after.
begin;
select plan(5);
select streamseal.set_service_name('lane-tail');
select streamseal.subscribe_all_tenants(array['tail.type'], 'tail-origin');

-- The origin emitted 1..5; 5 was lost.
select streamseal.ingest(array(
    select streamseal_test.copy('tail-origin', i, i, 'tl', i, 'tail.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 4) i));

select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('tail-origin', 1, 6, 'tail.type', array['t1'],
           array[5]::bigint[], array[1]::bigint[], array[5]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (4::bigint, '{[5,6)}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'the window announcing 1..5 leaves 5 suspected');
select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed, to_request
       from streamseal.verify_checkpoint('tail-origin', 6, 6, 'tail.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (4::bigint, '{}'::int8multirange, '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange) $$,
    'the quiet checkpoint after it confirms the tail loss and returns it to request');
select results_eq(
    $$ select floor, confirmed, newly_confirmed
       from streamseal.verify_checkpoint('tail-origin', 6, 6, 'tail.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (4::bigint, '{[5,6)}'::int8multirange, '{}'::int8multirange) $$,
    'a further quiet checkpoint keeps it confirmed without announcing it as new again');

-- A lane with nothing outstanding: heartbeats change nothing.
select streamseal.ingest(array(
    select streamseal_test.copy('tail-origin', 100 + i, i, 'tw', i, 'tail.type', 't2', event_id => streamseal_test.uid(100 + i))
    from generate_series(1, 3) i));
select results_eq(
    $$ select tenant, floor, suspected from streamseal.verify_checkpoint('tail-origin', 6, 9, 'tail.type', array['t2'],
           array[3]::bigint[], array[1]::bigint[], array[3]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t2'::text, 3::bigint, '{}'::int8multirange) $$,
    'fixture: a whole lane t2 at floor 3');
select results_eq(
    $$ select tenant, floor, suspected, confirmed, to_request from streamseal.verify_checkpoint('tail-origin', 9, 9, 'tail.type',
           array['t1', 't2'], array[0, 0]::bigint[], array[null, null]::bigint[], array[null, null]::bigint[],
           array['{}', '{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 4::bigint, '{}'::int8multirange, '{[5,6)}'::int8multirange, '{[5,6)}'::int8multirange),
              ('t2', 3, '{}', '{}', '{}') $$,
    'one heartbeat message for both tenants: the tail loss stays outstanding, the whole lane stays quiet');

select * from finish();
rollback;
