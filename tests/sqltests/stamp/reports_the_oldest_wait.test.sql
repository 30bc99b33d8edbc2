-- The stamper lag metric's source: stamp() returns how long its batch's oldest event waited
-- since it was stored (null when it stamped nothing), read in the database's clock.
begin;
select plan(3);
select streamseal.set_service_name('stamp-lag');

select is((select oldest_wait_seconds from streamseal.stamp()), null::double precision,
    'nothing to stamp: no wait to report');

select streamseal.append(array[
    streamseal_test.own('s', 1, 'item.added', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s', 2, 'item.added', event_id => streamseal_test.uid(2))]);
-- The first event has waited ten minutes (a stamper that was down), the second just arrived.
update streamseal.events set stored_at = now() - interval '10 minutes' where event_id = streamseal_test.uid(1);

create temp table stamped as select * from streamseal.stamp();
select is((select stamped from stamped), 2, 'both events stamped');
select ok((select oldest_wait_seconds between 600 and 660 from stamped),
    'the reported wait is the oldest event''s (about 600 s), not the newest''s');

select * from finish();
rollback;
