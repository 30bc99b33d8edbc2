-- Invariants 1 and 11: a consumer subscribed to some tenants of a type compares only those. A
-- checkpoint naming a subscribed and an unsubscribed tenant verifies the subscribed one and sets
-- the other aside: no lane, no hole, no request for a tenant it does not consume.
begin;
select plan(3);
select streamseal.set_service_name('lane-tenant-consumer');
select streamseal.subscribe(array['tn.type'], 'tn-origin', array['acme']);

select results_eq(
    $$ select tenant, event_type, floor, suspected from streamseal.verify_checkpoint('tn-origin', 1, 21, 'tn.type',
           array['globex', 'acme'], array[10, 10]::bigint[], array[1, 1]::bigint[], array[10, 10]::bigint[],
           array['{}', '{}']::int8multirange[]) $$,
    $$ values ('acme'::text, 'tn.type'::text, 0::bigint, '{[1,11)}'::int8multirange) $$,
    'only the subscribed tenant is verified (all 10 missing here)');
select results_eq(
    $$ select tenant from streamseal.lanes where origin = 'tn-origin' $$,
    $$ values ('acme'::text) $$,
    'no lane exists for the unsubscribed tenant');
select is_empty(
    $$ select * from streamseal.verify_checkpoint('tn-origin', 21, 31, 'tn.type', array['globex'],
           array[10]::bigint[], array[11]::bigint[], array[20]::bigint[], array['{}']::int8multirange[]) $$,
    'a checkpoint naming only an unsubscribed tenant returns nothing');

select * from finish();
rollback;
