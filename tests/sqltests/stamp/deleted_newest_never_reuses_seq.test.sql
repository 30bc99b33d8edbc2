-- Invariant 7: deleting the newest stamped event (close_stream) never lets the stamper reuse its
-- origin_seq or type_seq: the next event is numbered above it.
begin;
select plan(7);
select streamseal.set_service_name('stamp-no-reuse');

select streamseal.append(array[
    streamseal_test.own('keep', 1, 'item.added', event_id => streamseal_test.uid(1)),
    streamseal_test.own('keep', 2, 'item.added', event_id => streamseal_test.uid(2)),
    streamseal_test.own('gone', 1, 'item.added', event_id => streamseal_test.uid(3))]);
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (3, 3::bigint) $$,
    'three events stamped, the newest (in stream gone) holds origin_seq 3');

select is(streamseal.close_stream('t1', 'gone'), 1::bigint, 'close_stream removes the newest event');
select is((select max(origin_seq) from streamseal.numbered_events where origin = 'stamp-no-reuse'), 2::bigint,
    'the store''s highest origin_seq is now 2');

select streamseal.append(array[streamseal_test.own('keep', 3, 'item.added', event_id => streamseal_test.uid(4))]);
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (1, 4::bigint) $$,
    'the next stamp reports last_origin_seq 4, not 3');
select results_eq(
    $$ select origin_seq, type_seq from streamseal.numbered_events where event_id = streamseal_test.uid(4) $$,
    $$ values (4::bigint, 4::bigint) $$,
    'the new event gets origin_seq 4 and type_seq 4: the deleted numbers are not reused');
select results_eq(
    $$ select event_id, origin_seq, type_seq from streamseal.numbered_events where origin = 'stamp-no-reuse' order by origin_seq $$,
    $$ values (streamseal_test.uid(1), 1::bigint, 1::bigint), (streamseal_test.uid(2), 2, 2),
              (streamseal_test.uid(4), 4, 4) $$,
    'the survivors keep their numbers and the hole at 3 stays a hole');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'stamp-no-reuse' and stream_id = 'gone' $$,
    $$ values (0::bigint, 0::bigint, 0::bigint) $$,
    'the closed stream''s bucket keeps its row, folded to (0, 0, 0)');

select * from finish();
rollback;
