-- Invariant 6 (no leapfrog; reference/cursor-that-leapfrogged-a-hole.txt): type_seq 7 never
-- arrived while 8..20 did. A high-water mark would stand at 20 and read a later 7 as a
-- redelivery; the floor stops at 6, however many checkpoints pass, and moves to 20 only once 7
-- itself is stored.
begin;
select plan(6);
select streamseal.set_service_name('lane-leapfrog');
select streamseal.subscribe_all_tenants(array['frame.sent'], 'leap-origin');

select streamseal.ingest(array(
    select streamseal_test.copy('leap-origin', i, i, 'f1', i, 'frame.sent', event_id => streamseal_test.uid(i))
    from generate_series(1, 20) i where i <> 7));

select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('leap-origin', 1, 21, 'frame.sent', array['t1'],
           array[20]::bigint[], array[1]::bigint[], array[20]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (6::bigint, '{[7,8)}'::int8multirange) $$,
    'with 7 missing and 8..20 held the floor stops at 6, not 20');
select results_eq(
    $$ select floor, confirmed from streamseal.verify_checkpoint('leap-origin', 21, 21, 'frame.sent', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (6::bigint, '{[7,8)}'::int8multirange) $$,
    'the next (quiet) checkpoint confirms the hole and the floor still stands at 6');

select ok(
    (select l.floor < pg_catalog.lower(l.confirmed) from streamseal.lanes l where l.origin = 'leap-origin'),
    'the stored floor lies below the lowest hole');

-- 7 arrives late (the repair). It is stored, not discarded as a redelivery.
select results_eq(
    $$ select * from streamseal.ingest(array[streamseal_test.copy('leap-origin', 7, 7, 'f1', 7, 'frame.sent',
           event_id => streamseal_test.uid(7))]) $$,
    $$ values (streamseal_test.uid(7)) $$,
    'the late 7 is stored');
select results_eq(
    $$ select floor, suspected, confirmed, to_request from streamseal.verify_checkpoint('leap-origin', 21, 21, 'frame.sent',
           array['t1'], array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (20::bigint, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'the next checkpoint moves the floor over the filled hole to everything announced: 20');
select results_eq(
    $$ select floor, newly_confirmed, to_request from streamseal.verify_checkpoint('leap-origin', 21, 21, 'frame.sent',
           array['t1'], array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (20::bigint, '{}'::int8multirange, '{}'::int8multirange) $$,
    'and a caught-up lane stays put without alarming');

select * from finish();
rollback;
