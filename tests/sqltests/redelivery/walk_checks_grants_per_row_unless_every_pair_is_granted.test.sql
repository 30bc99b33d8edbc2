-- Invariant 11 (isolation): the whole-lane walk (a backfill's selection: no window, no streams)
-- skips the per-row grant lookup only when every requested (tenant, type) pair is granted; with
-- grants that cross (t1 of type a, t2 of type b) the requester's granted tenants span both types,
-- and it still receives exactly its granted pairs, never t1's b or t2's a.
begin;
select plan(2);
select streamseal.set_service_name('redeliver-walk-grants');
select streamseal.grant_redelivery('walk-billing', array['wa'], array['t1']);
select streamseal.grant_redelivery('walk-billing', array['wb'], array['t2']);
select streamseal.append('t1', 's1', 1, 'wa', '\x01'::bytea, event_id => streamseal_test.uid(1));
select streamseal.append('t1', 's1', 2, 'wb', '\x02'::bytea, event_id => streamseal_test.uid(2));
select streamseal.append('t2', 's2', 1, 'wa', '\x03'::bytea, event_id => streamseal_test.uid(3));
select streamseal.append('t2', 's2', 2, 'wb', '\x04'::bytea, event_id => streamseal_test.uid(4));
-- Padding of another type, so the lane is wider than 8 pages of 2: the walk, not the window read.
select streamseal.append(array(select streamseal_test.own('z', v, event_type => 'wz') from generate_series(1, 20) v));
select streamseal.stamp();

select results_eq(
    $$ select event_id from streamseal.select_redelivery(null, array['wa', 'wb'], requester => 'walk-billing', state_only => true, max_events => 2) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(4)) $$,
    'crossing grants: only the granted pairs, row by row');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(null, array['wa'], requester => 'walk-billing', state_only => true) $$,
    $$ values (streamseal_test.uid(1)) $$,
    'one type, every pair granted: the same rows without a lookup per row');
select * from finish();
rollback;
