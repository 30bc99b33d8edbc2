-- Invariants 1 and 6: a lane is born at the first checkpoint this consumer sees for it, with
-- floor = birth_floor = that window's first type_seq - 1. Everything before is history (pending
-- backfill), never a gap; everything from the first announced type_seq on is watched, so a loss
-- inside the very first window is still a hole. A heartbeat for an unknown lane creates nothing.
begin;
select plan(8);
select streamseal.set_service_name('lane-birth');
select streamseal.subscribe_all_tenants(array['birth.type'], 'birth-origin');

-- This consumer started late: it holds type_seqs 101..105 of tenant t1, none of 1..100.
select streamseal.ingest(array(
    select streamseal_test.copy('birth-origin', 1000 + i, i, 'b1', i, 'birth.type', 't1', event_id => streamseal_test.uid(i))
    from generate_series(101, 105) i));

select results_eq(
    $$ select tenant, event_type, floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('birth-origin', 1100, 1106, 'birth.type', array['t1'],
           array[5]::bigint[], array[101]::bigint[], array[105]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 'birth.type'::text, 105::bigint, '{}'::int8multirange, '{}'::int8multirange,
               '{}'::int8multirange, '{}'::int8multirange) $$,
    'the first checkpoint seen (type_seqs 101..105, all held) leaves no hole: 1..100 are not missing');
select results_eq(
    $$ select floor, birth_floor, last_type_seq from streamseal.lanes
       where origin = 'birth-origin' and tenant = 't1' and event_type = 'birth.type' $$,
    $$ values (105::bigint, 100::bigint, 105::bigint) $$,
    'the lane records [1, 100] as history before its birth and its floor at 105');

select results_eq(
    $$ select tenant, floor, suspected from streamseal.verify_checkpoint('birth-origin', 1106, 1108, 'birth.type',
           array['t1', 't2'], array[0, 0]::bigint[], array[null, null]::bigint[], array[null, null]::bigint[],
           array['{}', '{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 105::bigint, '{}'::int8multirange) $$,
    'a heartbeat evaluates the known lane and returns nothing for the unknown one');
select is_empty(
    $$ select from streamseal.lanes where origin = 'birth-origin' and tenant = 't2' $$,
    'a heartbeat for an unknown lane creates no lane: it announced nothing');

-- Tenant t3 is born on a window whose first type_seq (201) never arrived: 202 and 203 did.
select streamseal.ingest(array(
    select streamseal_test.copy('birth-origin', 2000 + i, i, 'b3', i, 'birth.type', 't3', event_id => streamseal_test.uid(i))
    from generate_series(202, 203) i));
select results_eq(
    $$ select tenant, floor, suspected from streamseal.verify_checkpoint('birth-origin', 2200, 2204, 'birth.type',
           array['t3'], array[3]::bigint[], array[201]::bigint[], array[203]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t3'::text, 200::bigint, '{[201,202)}'::int8multirange) $$,
    'birth is set by the first announced type_seq, not by the first held one: a loss in the first window is a hole');
select results_eq(
    $$ select birth_floor from streamseal.lanes where origin = 'birth-origin' and tenant = 't3' $$,
    $$ values (200::bigint) $$,
    'the t3 lane was born at 200');

-- Later checkpoints move the floor, never the birth.
select streamseal.ingest(array(
    select streamseal_test.copy('birth-origin', 1000 + i, i, 'b1', i, 'birth.type', 't1', event_id => streamseal_test.uid(i))
    from generate_series(106, 108) i));
select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('birth-origin', 1108, 1110, 'birth.type', array['t1'],
           array[3]::bigint[], array[106]::bigint[], array[108]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (108::bigint, '{}'::int8multirange) $$,
    'the next window (106..108, all held) moves the floor to 108');
select results_eq(
    $$ select floor, birth_floor from streamseal.lanes where origin = 'birth-origin' and tenant = 't1' $$,
    $$ values (108::bigint, 100::bigint) $$,
    'the birth floor stays where the lane was born');

select * from finish();
rollback;
