-- Invariant 8 (a stamp costs O(batch), never O(lane)), with stamp()'s plans kept for the session
-- (issue 20): a plan cached while events was never analyzed (a new store after a bulk load) must
-- still reach the claimed events by event_id. The generic plan of "event_id = any(batch) and
-- origin = self and origin_seq is null" walked the (origin, origin_seq) index over every own
-- event instead (own events keep origin_seq null since issue 16): 20 000 rows read for a
-- 50-event batch, growing with the lane (bench relay: seconds of relay lag). Rows read come
-- from streamseal_test.rows_read.
begin;
select plan(3);
select streamseal.set_service_name('stamp-unanalyzed');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 2000), i / 2000 + 1, 'bench.' || chr(97 + i % 4))
    from generate_series(0, 19999) i));
select count(*) from streamseal.stamp(100000);

create temp table reads (call int, events bigint, stamped int) on commit drop;
-- Eight small batches: past the five custom plans after which a cached generic plan may be used.
do $$
declare
    before bigint;
    n int;
begin
    for k in 1..8 loop
        perform streamseal.append(array(
            select streamseal_test.own('small-' || k || '-' || i, 1, 'bench.a') from generate_series(1, 50) i));
        before := streamseal_test.rows_read('events');
        select s.stamped into n from streamseal.stamp(10000) s;
        insert into reads values (k, streamseal_test.rows_read('events') - before, n);
    end loop;
end
$$;

select is((select sum(stamped)::int from reads), 400, 'fixture: eight batches of 50 stamped');
select cmp_ok((select max(events) from reads where call > 5), '<=', 100::bigint,
    'a 50-event stamp after the custom plans reads its 50 events, not the 20 000-event lane');
select cmp_ok((select max(events) from reads), '<=', 100::bigint,
    'and so does every call before it');

select * from finish();
rollback;
