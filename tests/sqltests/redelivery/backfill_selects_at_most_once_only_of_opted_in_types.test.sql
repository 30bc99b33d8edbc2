-- Invariants 1 and 6, issue 18: a backfill (a state-only selection) selects an at-most-once
-- occurrence only of a type the request opts in (at_most_once_types), in every read path
-- (a wide walk, a window, named streams, type_seq ranges); ephemeral events never; a plain
-- repair never selects at-most-once occurrences, opt-in or not.
begin;
select plan(6);
select streamseal.set_service_name('redeliver-amo-opt-in');
select streamseal.append('t1', 's1', 1, 'tick', '\x01'::bytea, event_id => streamseal_test.uid(1));
select streamseal.append('t1', 's1', 2, 'tick', '\x02'::bytea, flags => 2, event_id => streamseal_test.uid(2));
select streamseal.append('t1', 's1', 3, 'tick', '\x03'::bytea, flags => 3, event_id => streamseal_test.uid(3));
select streamseal.append('t1', 's2', 1, 'tock', '\x04'::bytea, flags => 2, event_id => streamseal_test.uid(4));
select streamseal.stamp();

select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick', 'tock'], state_only => true) $$,
    $$ values (streamseal_test.uid(1)) $$,
    'without an opt-in a backfill selects no at-most-once occurrence');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick', 'tock'], state_only => true,
                                                         at_most_once_types => array['tick']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'the opted-in type''s at-most-once occurrence is selected; an ephemeral one never; tock is not opted in');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], from_seq => 1, to_seq => 5,
                                                         state_only => true, at_most_once_types => array['tick']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'in a window too');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], streams => array['s1'], from_seq => 1,
                                                         state_only => true, at_most_once_types => array['tick']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'for named streams too');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], type_seq_ranges => '{[1,4)}',
                                                         state_only => true, at_most_once_types => array['tick']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'for type_seq ranges too');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], at_most_once_types => array['tick']) $$,
    $$ values (streamseal_test.uid(1)) $$,
    'a plain repair never selects an at-most-once occurrence, opt-in or not');
select * from finish();
rollback;
