-- Invariants 1 and 9: a hole seen by one checkpoint is only suspected (a straggler in flight gets
-- one cycle to arrive); a hole still missing at the next checkpoint is confirmed, reported once
-- as newly confirmed and returned to request; a straggler that arrives in time is never
-- confirmed, and a confirmed hole that arrives clears. A copy that was held when checked and is
-- reaped afterwards (ephemeral) was delivered: it never becomes a hole.
begin;
select plan(8);
select streamseal.set_service_name('lane-two-cycle');
select streamseal.subscribe_all_tenants(array['cycle.type'], 'cycle-origin');

-- Held: 1..10 except 4 and 8; 9 is an ephemeral event.
select streamseal.ingest(array(
    select streamseal_test.copy('cycle-origin', i, i, 'c1', i, 'cycle.type', flags => case when i = 9 then 1 else 0 end,
                                event_id => streamseal_test.uid(i))
    from generate_series(1, 10) i where i not in (4, 8)));

select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('cycle-origin', 1, 11, 'cycle.type', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'cycle.type'::text, 3::bigint, '{[4,5),[8,9)}'::int8multirange, '{}'::int8multirange,
               '{}'::int8multirange, '{}'::int8multirange) $$,
    'first sight: 4 and 8 are suspected, nothing is confirmed or requested yet');

-- The consumer's reaper removes the ephemeral copy 9: it was delivered, so it is no hole.
update streamseal.events set stored_at = now() - interval '2 hours' where event_id = streamseal_test.uid(9);
select is(streamseal.reap_ephemeral(interval '1 hour'), 1::bigint, 'fixture: the reaper removed the ephemeral copy 9');

-- 8 was only late; 11 and 12 arrive with the next window.
select streamseal.ingest(array(
    select streamseal_test.copy('cycle-origin', i, i, 'c1', i, 'cycle.type', event_id => streamseal_test.uid(i))
    from generate_series(8, 12) i where i in (8, 11, 12)));
select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('cycle-origin', 11, 13, 'cycle.type', array['t1'],
           array[2]::bigint[], array[11]::bigint[], array[12]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'cycle.type'::text, 3::bigint, '{}'::int8multirange, '{[4,5)}'::int8multirange,
               '{[4,5)}'::int8multirange, '{[4,5)}'::int8multirange) $$,
    'second sight: 4 is confirmed (newly) and to be requested; the straggler 8 cleared unconfirmed; the reaped 9 is no hole');

-- A new hole in this window (15) is suspected while 4 stays confirmed, not newly confirmed again.
select streamseal.ingest(array(
    select streamseal_test.copy('cycle-origin', i, i, 'c1', i, 'cycle.type', event_id => streamseal_test.uid(i))
    from generate_series(13, 16) i where i <> 15));
select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('cycle-origin', 13, 17, 'cycle.type', array['t1'],
           array[4]::bigint[], array[13]::bigint[], array[16]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'cycle.type'::text, 3::bigint, '{[15,16)}'::int8multirange, '{[4,5)}'::int8multirange,
               '{}'::int8multirange, '{[4,5)}'::int8multirange) $$,
    'third sight: 4 stays confirmed without being newly confirmed again; the new hole 15 is only suspected');

-- 4 arrives (repaired); 15 does not.
select streamseal.ingest(array[streamseal_test.copy('cycle-origin', 4, 4, 'c1', 4, 'cycle.type', event_id => streamseal_test.uid(4))]);
select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('cycle-origin', 17, 17, 'cycle.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'cycle.type'::text, 14::bigint, '{}'::int8multirange, '{[15,16)}'::int8multirange,
               '{[15,16)}'::int8multirange, '{[15,16)}'::int8multirange) $$,
    'the arrived 4 clears and the floor moves up to the next hole; 15 is confirmed by the quiet checkpoint');

select streamseal.ingest(array[streamseal_test.copy('cycle-origin', 15, 15, 'c1', 15, 'cycle.type', event_id => streamseal_test.uid(15))]);
select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('cycle-origin', 17, 17, 'cycle.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'cycle.type'::text, 16::bigint, '{}'::int8multirange, '{}'::int8multirange,
               '{}'::int8multirange, '{}'::int8multirange) $$,
    'once 15 arrives the lane is whole: floor 16, no hole of any kind');
select results_eq(
    $$ select floor, last_type_seq, suspected, confirmed, requested from streamseal.lanes
       where origin = 'cycle-origin' and tenant = 't1' and event_type = 'cycle.type' $$,
    $$ values (16::bigint, 16::bigint, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'the stored lane agrees with what verify returned');
select isnt((select checked_at from streamseal.lanes where origin = 'cycle-origin'), null,
    'the lane records when it was last checked');

select * from finish();
rollback;
