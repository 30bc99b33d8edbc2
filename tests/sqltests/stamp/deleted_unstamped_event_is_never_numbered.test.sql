-- Invariant 7 (no gap, no reuse) with the stamper's queue (issue 16): an own event deleted before
-- it was numbered leaves nothing queued behind it, so the stamper numbers the survivors densely
-- and never hands a number to an event that is gone.
begin;
select plan(4);
select streamseal.set_service_name('stamp-ghost');

select streamseal.append(array[
    streamseal_test.own('s', 1, event_id => streamseal_test.uid(1)),
    streamseal_test.own('s', 2, event_id => streamseal_test.uid(2)),
    streamseal_test.own('s', 3, event_id => streamseal_test.uid(3))]);
delete from streamseal.events where event_id = streamseal_test.uid(2);

select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (2, 2::bigint) $$,
    'two survivors stamped, numbers 1 and 2');
select results_eq(
    $$ select event_id, origin_seq, type_seq from streamseal.numbered_events where origin = 'stamp-ghost' order by origin_seq $$,
    $$ values (streamseal_test.uid(1), 1::bigint, 1::bigint), (streamseal_test.uid(3), 2, 2) $$,
    'dense: the deleted event took no number');
select results_eq($$ select stamped from streamseal.stamp() $$, $$ values (0) $$,
    'nothing is left to number');
select is(streamseal_test.digest_drift(), 0::bigint, 'the digests equal a recompute');

select * from finish();
rollback;
