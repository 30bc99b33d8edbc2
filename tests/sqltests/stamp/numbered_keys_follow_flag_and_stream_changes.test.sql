-- Invariant 4 (digest truth) with own numbers kept apart (issue 16): own_numbers carries the
-- keys that folds, checkpoints and windows read (flags, stream), so a change of a numbered own
-- event's flags (reclassify_ephemeral) or of an ephemeral one's stream must follow it there, or
-- a recompute and a checkpoint would still count what the maintained folds took out.
begin;
select plan(4);
select streamseal.set_service_name('keys-follow');

select count(*) from streamseal.append(array[
    streamseal_test.own('s1', 1, 'noise.made', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 2, 'noise.made', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s2', 1, 'order.placed', event_id => streamseal_test.uid(3))]);
select results_eq($$ select stamped from streamseal.stamp() $$, $$ values (3) $$, 'fixture: three stamped');

select is(streamseal.reclassify_ephemeral('noise.made'), 2::bigint, 'fixture: two events reclassified ephemeral');
update streamseal.events set stream_id = 's9' where event_id = streamseal_test.uid(2);

select results_eq(
    $$ select n.event_id, n.flags, n.stream_id from streamseal.event_numbers n where n.origin = 'keys-follow' order by n.origin_seq $$,
    $$ select e.event_id, e.flags, e.stream_id from streamseal.events e order by e.local_id $$,
    'event_numbers shows each own event''s current flags and stream');
select is(streamseal_test.digest_drift(), 0::bigint, 'the maintained digests equal a recompute');

select * from finish();
rollback;
