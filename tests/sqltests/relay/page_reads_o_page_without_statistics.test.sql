-- Invariant 8 (a page costs O(page) in the database, never O(lane)): the relay's page above its
-- cursor reads that page's own_numbers and events rows, even with neither table analyzed (a new
-- store after a bulk load). Through the own_events view, with no origin in the predicate, the
-- (origin, origin_seq) key could not bound "origin_seq > after": every page read the whole lane
-- (relay p99 128 ms against 37 ms in bench repair). Rows read come from streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('relay-unanalyzed');

-- 20 000 own events over 2000 streams (10 each), four types, numbered.
select streamseal_test.own_history(20000);

select streamseal_test.measure('tail', $q$ select * from streamseal.relay_page(19800, 500, 0) $q$, 'origin_seq');
select streamseal_test.measure('middle', $q$ select * from streamseal.relay_page(10000, 500, 0) $q$, 'origin_seq');

select results_eq($$ select what, rows_returned, last_seq from reads order by what $$,
    $$ values ('middle', 500, 10500::bigint), ('tail', 200, 20000::bigint) $$,
    'fixture: each page holds the numbers above its position');
select cmp_ok((select numbers + events from reads where what = 'tail'), '<=', 2 * 200 + 100::bigint,
    'a page at the head of the lane reads its 200 rows, not the 20 000-row lane');
select cmp_ok((select numbers + events from reads where what = 'middle'), '<=', 2 * 500 + 100::bigint,
    'a page in the middle reads its 500 rows, not the rest of the lane');
select cmp_ok((select events from reads where what = 'middle'), '<=', 500 + 50::bigint,
    'and probes events once per row it returns');

select * from finish();
rollback;
