-- Invariant 13: an own event the relay cannot publish is set aside with its reason and can be
-- re-queued by an operator; only stamped own events can be quarantined.
begin;
select plan(8);
select streamseal.set_service_name('quarantine-flow');
select streamseal.append(array[streamseal_test.own('s', 1, event_id => streamseal_test.uid(1)),
                               streamseal_test.own('s', 2, event_id => streamseal_test.uid(2))]);
select streamseal.stamp();

select lives_ok($$ select streamseal.quarantine_event(streamseal_test.uid(1), 'relay', 'nats: maximum payload exceeded') $$,
    'the relay quarantines an event it cannot publish');
select results_eq($$ select event_id, origin_seq, stage, reason, requeued_at is null from streamseal.quarantine $$,
    $$ values (streamseal_test.uid(1), 1::bigint, 'relay', 'nats: maximum payload exceeded', true) $$,
    'the quarantine names the event, its sequence and the reason');
select is((select count(*)::int from streamseal.quarantine_requeued(10)), 0, 'nothing is re-queued yet');
select throws_ok($$ select streamseal.quarantine_requeue(array[streamseal_test.uid(2)]) $$, '22023',
    'quarantine_requeue: event 00000000-0000-0000-0000-000000000002 is not quarantined', 'only a quarantined event is re-queued');
select results_eq($$ select * from streamseal.quarantine_requeue() $$, $$ values (streamseal_test.uid(1)) $$,
    'requeue without ids marks every quarantined event');
select results_eq($$ select event_id from streamseal.quarantine_requeued(10) $$, $$ values (streamseal_test.uid(1)) $$,
    'the relay finds the re-queued event');
select streamseal.quarantine_release(streamseal_test.uid(1));
select is((select count(*)::int from streamseal.quarantine), 0, 'a published event leaves the quarantine');
select throws_ok($$ select streamseal.quarantine_event(streamseal_test.uid(153), 'relay', 'x') $$, '22023',
    'quarantine_event: event 00000000-0000-0000-0000-000000000099 is not a stamped own event of this service',
    'only a stamped own event is quarantined');

select * from finish();
rollback;
