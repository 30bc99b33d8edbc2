-- Invariant 8 (a page costs O(page) in the database, never O(lane)): with the own lane's numbers
-- in own_numbers (issue 16) and neither table analyzed (a new store after a bulk load; the
-- planner guessed 48 rows for 19 050), every select_redelivery path reads a page's rows of
-- own_numbers and events, not the lane's. Through the own_events join the planner materialized
-- the whole own_numbers scan and rescanned it per page row: 795 ms a 500-row page instead of
-- ~3 ms. Rows read come from streamseal_test.rows_read.
begin;
select plan(9);
select streamseal.set_service_name('redeliver-unanalyzed');

-- 20 000 own events over 2000 streams (10 each), four types, numbered.
select streamseal_test.own_history(20000);
select is((select count(*)::int from streamseal.own_numbers), 20000, 'fixture: 20 000 own events numbered');
select ok((select c.reltuples < 1000 from pg_catalog.pg_class c where c.oid = 'streamseal.own_numbers'::regclass),
    'fixture: own_numbers has no statistics of its size');

select * from streamseal_test.own_lane_pages_read_o_page();

select * from finish();
rollback;
