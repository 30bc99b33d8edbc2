-- Invariant 8 (a page costs O(page) in the database, never O(lane)) for the feed's own lane:
-- a page of own events above a position reads that page's own_numbers and events rows, even
-- with neither table analyzed (a new store after a bulk load), in scope or not. Through the
-- own_events view, with no origin in the predicate, "origin_seq > after" could not use the
-- (origin, origin_seq) key and every page read the whole lane. Rows read come from
-- streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('feed-unanalyzed');

-- 20 000 own events over 2000 streams (10 each), four types, numbered.
select streamseal_test.own_history(20000);

select streamseal_test.measure('all types', $q$ select * from streamseal._feed_own_rows(10000, 20000, null, null, 500) $q$, 'origin_seq');
select streamseal_test.measure('one type', $q$ select * from streamseal._feed_own_rows(10000, 20000, array['bench.b'], array['t1'], 500) $q$, 'origin_seq');

select results_eq($$ select what, rows_returned, last_seq from reads order by what $$,
    $$ values ('all types', 500, 10500::bigint), ('one type', 500, 11998::bigint) $$,
    'fixture: each page holds the numbers in scope above its position');
select cmp_ok((select numbers from reads where what = 'all types'), '<=', 500 + 100::bigint,
    'a page of 500 reads 500 rows of own_numbers, not the rest of the 20 000-row lane');
select cmp_ok((select events from reads where what = 'one type'), '<=', 500 + 50::bigint,
    'a page of one type probes events only for the rows in scope');
select cmp_ok((select numbers from reads where what = 'one type'), '<=', 4 * 500 + 100::bigint,
    'and reads the 2000 numbers it passes, not the lane');

select * from finish();
rollback;
