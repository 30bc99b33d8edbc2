-- Invariant 8 (a healthy audit costs O(open window) in the database): the readers that fold,
-- count or window the own lane by number (checkpoints, type digests' live fringe, windowed
-- stream digests, epoch folds, unservable ranges) read own_numbers over their window by its
-- (origin, origin_seq) key and never touch the wide events rows, even with neither table
-- analyzed (a new store after a bulk load of 20 000 own events, issue 16). Rows read come from
-- streamseal_test.rows_read.
begin;
select plan(6);
select streamseal.set_service_name('windows-unanalyzed');

-- 20 000 own events over 2000 streams (10 each), four types, numbered.
select streamseal_test.own_history(20000);

-- A checkpoint of the last 500 numbers.
update streamseal.checkpoint_state set published_through = 19500;
update streamseal.relay_state set published_through = 20000;
select streamseal_test.measure('checkpoint', $q$ select * from streamseal.next_checkpoint() $q$);
-- Type digests and stream digests of a 500-number window.
select streamseal_test.measure('type_digests', $q$ select * from streamseal.type_digests('windows-unanalyzed', 19501, 20001) $q$);
select streamseal_test.measure('stream_digests', $q$ select * from streamseal.stream_digests_page('windows-unanalyzed',
    array['bench.a','bench.b','bench.c','bench.d'], 19501, 20001, null, 1000) $q$);
-- One fold of a 500-number range.
select streamseal_test.measure('fold', $q$ select * from streamseal._epoch_fold('windows-unanalyzed', 10001, 10501) $q$);
-- What a window request cannot serve.
select streamseal_test.measure('unservable', $q$ select * from streamseal.redelivery_unservable(array['t1'],
    array['bench.a'], 10001, 10501) $q$);

select results_eq($$ select what, rows_returned from reads order by what $$,
    $$ values ('checkpoint', 5), ('fold', 4), ('stream_digests', 500), ('type_digests', 4), ('unservable', 0) $$,
    'fixture: each answer covers its window');
select cmp_ok((select numbers from reads where what = 'checkpoint'), '<=', 500 + 50::bigint,
    'a checkpoint of 500 numbers reads those 500, not the 20 000-row lane');
select cmp_ok((select numbers from reads where what = 'type_digests'), '<=', 500 + 50::bigint,
    'type digests of a 500-number window read those 500');
select cmp_ok((select numbers from reads where what = 'stream_digests'), '<=', 500 + 50::bigint,
    'stream digests of a 500-number window read those 500');
select cmp_ok((select numbers from reads where what = 'fold') + (select numbers from reads where what = 'unservable'),
    '<=', 3 * 500 + 100::bigint, 'a fold (one read of its 500) and an unservable window (two: present and at-most-once) read only their window');
select is((select sum(events)::int from reads), 0, 'none of them reads a row of events');

select * from finish();
rollback;
