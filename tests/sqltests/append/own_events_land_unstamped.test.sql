-- Invariant 7: append stores own events unstamped (the stamper numbers them in commit order),
-- keeps them out of the digests until then, and returns their ids in batch order.
begin;
select plan(4);
select streamseal.set_service_name('append-own');

select results_eq(
    $$ select streamseal.append(array[
           streamseal_test.own('s1', 1, event_id => streamseal_test.uid(1)),
           streamseal_test.own('s1', 2, event_id => streamseal_test.uid(2))]) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'append returns the stored ids in batch order');

select is((select count(*)::int from streamseal.events where origin = 'append-own' and origin_seq is null), 2,
    'own events land with no origin_seq');
select is((select count(*)::int from streamseal.stream_digests where n <> 0), 0,
    'unstamped own events are not folded yet');

select streamseal.stamp();
select is((select n from streamseal.stream_digests where origin = 'append-own' and stream_id = 's1'), 2::bigint,
    'stamping folds them into their bucket');

select * from finish();
rollback;
