-- Invariants 1 and 11: a consumer compares only what it consumes. A checkpoint for an event type
-- this service does not subscribe to from that origin (or from any origin) returns nothing and
-- records nothing, however much of it is "missing"; subscribing from any origin ('*') counts.
begin;
select plan(6);
select streamseal.set_service_name('lane-unconsumed');
-- Consumed: 'watched.type' from 'unc-origin' only; 'any.type' from any origin.
select streamseal.subscribe_all_tenants(array['watched.type'], 'unc-origin');
select streamseal.subscribe_all_tenants(array['any.type']);

select is_empty(
    $$ select * from streamseal.verify_checkpoint('unc-origin', 1, 11, 'ignored.type', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]) $$,
    'a type not consumed at all: nothing returned although all 10 are missing here');
select is_empty(
    $$ select * from streamseal.verify_checkpoint('unc-other', 1, 11, 'watched.type', array['t1'],
           array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]) $$,
    'a type consumed from another origin only: nothing returned for this origin');
select is_empty(
    $$ select from streamseal.lanes where origin in ('unc-origin', 'unc-other') $$,
    'and no lane was created for either');

select results_eq(
    $$ select tenant, event_type, floor, suspected from streamseal.verify_checkpoint('unc-other', 1, 11, 'any.type',
           array['t1'], array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'any.type'::text, 0::bigint, '{[1,11)}'::int8multirange) $$,
    'a type consumed from any origin is verified for every origin');

-- Unsubscribing stops verification of a lane that already exists and forgets it (what is
-- emitted while unconsumed is history: see resubscribing_starts_a_new_lane).
select streamseal.unsubscribe_all_tenants(array['any.type']);
select is_empty(
    $$ select * from streamseal.verify_checkpoint('unc-other', 11, 11, 'any.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    'after unsubscribing, the next checkpoint of that type returns nothing (no confirmation, no request)');
select is_empty(
    $$ select * from streamseal.lanes where origin = 'unc-other' and event_type = 'any.type' $$,
    'and the lane is forgotten, its suspected holes with it');

select * from finish();
rollback;
