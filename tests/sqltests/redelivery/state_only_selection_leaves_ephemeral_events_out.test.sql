-- Invariant 2 and issue 18: a backfill (a state-only selection) never ships ephemeral events:
-- they are short-lived by definition, so history is never backfilled with them. A plain repair
-- still selects a present ephemeral event (at_most_once_and_reaped_ephemeral_excluded).
begin;
select plan(2);
select streamseal.set_service_name('redeliver-state-only');
select streamseal.append('t1', 's1', 1, 'tick', '\x01'::bytea, event_id => streamseal_test.uid(1));
select streamseal.append('t1', 's1', 2, 'tick', '\x02'::bytea, flags => 1, event_id => streamseal_test.uid(2));
select streamseal.append('t1', 's1', 3, 'tick', '\x03'::bytea, event_id => streamseal_test.uid(3));
select streamseal.stamp();

select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], state_only => true) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(3)) $$,
    'a state-only selection leaves the ephemeral event out');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], from_seq => 1, to_seq => 4, state_only => true) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(3)) $$,
    'in a window too');
select * from finish();
rollback;
