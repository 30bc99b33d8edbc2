-- Invariant 8 (a page costs O(page) in the database, never O(lane)), under the statistics a store
-- has after autovacuum analyzed it nearly empty: own_numbers and events were analyzed when their
-- pages held only dead rows (relpages > 0, reltuples 0), and 20 000 own events arrived since. The
-- planner then estimates one row for every scan, and every index of own_numbers costs the same:
-- requested type_seqs were read through the (origin, origin_seq) primary key with only origin as
-- its condition, the whole lane filtered (20 300 rows for a 300-row page). The suite
-- own_lane_pages_read_o_page_without_statistics failed the same way in full pgTAP runs whenever
-- autovacuum had analyzed these tables after an earlier suite's rolled-back inserts.
begin;
select plan(9);
select streamseal.set_service_name('redeliver-analyzed-empty');

-- Pages of dead rows analyzed (a rolled-back load), then 20 000 own events over 2000 streams
-- (10 each), four types, numbered.
savepoint dead_rows;
select streamseal_test.own_history(20000);
rollback to savepoint dead_rows;
analyze streamseal.own_numbers;
analyze streamseal.events;
select streamseal_test.own_history(20000);
select is((select count(*)::int from streamseal.own_numbers), 20000, 'fixture: 20 000 own events numbered');
select ok((select bool_and(c.reltuples = 0 and c.relpages > 0) from pg_catalog.pg_class c
           where c.oid in ('streamseal.own_numbers'::regclass, 'streamseal.events'::regclass)),
    'fixture: own_numbers and events were analyzed holding pages of dead rows only');

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
