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

-- A wide window from a cursor: the (stream, version) walk.
select streamseal_test.measure('walk', $q$ select * from streamseal.select_redelivery(array['t1'],
    array['bench.a','bench.b','bench.c','bench.d'], null, 1, 20001, null, 's1005', 5, 500, 20000) $q$);
-- From the start.
select streamseal_test.measure('walk from start', $q$ select * from streamseal.select_redelivery(array['t1'],
    array['bench.a','bench.b','bench.c','bench.d'], null, 1, 20001, null, null, null, 500, 20000) $q$);
-- A narrow window (at most 8 pages of origin_seqs).
select streamseal_test.measure('window', $q$ select * from streamseal.select_redelivery(array['t1'],
    array['bench.a','bench.b','bench.c','bench.d'], null, 10001, 11001, null, null, null, 500, 20000) $q$);
-- A few requested type_seqs of one type.
select streamseal_test.measure('type_seqs', $q$ select * from streamseal.select_redelivery(array['t1'],
    array['bench.b'], null, null, null, '{[100,400)}', null, null, 500, 20000) $q$);
-- Named streams over the wide window.
select streamseal_test.measure('streams', $q$ select * from streamseal.select_redelivery(array['t1'],
    array['bench.a','bench.b','bench.c','bench.d'], array['s0010','s0020','s0030'], 1, 20001, null, null, null, 500, 20000) $q$);

select results_eq($$ select what, rows_returned from reads order by what $$,
    $$ values ('streams', 30), ('type_seqs', 300), ('walk', 500), ('walk from start', 500), ('window', 500) $$,
    'fixture: each page holds what it asked for');
select cmp_ok((select numbers from reads where what = 'walk'), '<=', 1000::bigint,
    'a walk page of 500 reads O(page) rows of own_numbers, not the 20 000-row lane');
select cmp_ok((select numbers from reads where what = 'walk from start'), '<=', 1000::bigint,
    'the first walk page too');
select cmp_ok((select events from reads where what = 'walk'), '<=', 1000::bigint,
    'and O(page) rows of events');
select cmp_ok((select numbers + events from reads where what = 'window'), '<=', 2 * 1000 + 1000::bigint,
    'a narrow window reads its 1000 numbers and their events, not the lane');
select cmp_ok((select numbers + events from reads where what = 'type_seqs'), '<=', 2 * 300 + 100::bigint,
    'requested type_seqs read those events only');
select cmp_ok((select numbers + events from reads where what = 'streams'), '<=', 2 * 30 + 30::bigint,
    'named streams read those streams only');

select * from finish();
rollback;
