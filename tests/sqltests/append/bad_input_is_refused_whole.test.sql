-- Invariant 1: a bad event refuses the whole append batch with a message naming it: nothing of
-- the batch is written, even when the bad event is not the first.
begin;
select plan(8);
select streamseal.set_service_name('append-bad-input');

-- Baseline: one stamped event, so the store and its digests are not empty.
select streamseal.append(array[streamseal_test.own('base', 1, event_id => streamseal_test.uid(1))]);
select streamseal.stamp();
create temp table digests_before on commit drop as
select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests;

select throws_ok(
    $$ select streamseal.append(array[
           streamseal_test.own('base', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.own('fresh', 1, flags => 9, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000003 (#2 of the batch): flags 9 has unknown bits 8 (known: 1 ephemeral, 2 at-most-once, 4 state-only)',
    'unknown flag bits refuse the batch');
select throws_ok(
    $$ select streamseal.append(array[
           streamseal_test.own('base', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.own('fresh', 1, event_id => streamseal_test.uid(3)),
           streamseal_test.own(null, 1, event_id => streamseal_test.uid(4))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000004 (#3 of the batch): stream_id is required',
    'a null stream_id refuses the batch');
select throws_ok(
    $$ select streamseal.append(array[
           streamseal_test.own('base', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.own('fresh', 1, event_id => streamseal_test.uid(5)),
           streamseal_test.own('fresh', 2, event_id => streamseal_test.uid(5))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000005 appears more than once in the batch with different content',
    'one id with two contents refuses the batch');
select throws_ok(
    $$ select streamseal.append(array[
           streamseal_test.own('base', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.own('fresh', 1, event_id => streamseal_test.uid(1))]) $$,
    '23505',
    'duplicate key value violates unique constraint "events_pkey"',
    'an id already in the store refuses the batch');

select is((select count(*)::int from streamseal.events), 1, 'no refused event was written');
select is((select count(*)::int from streamseal.events e
           where not exists (select from streamseal.numbered_events n where n.event_id = e.event_id)), 0,
    'nothing is left pending');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests $$,
    $$ select * from digests_before $$,
    'the digests are unchanged');
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (0, 1::bigint) $$,
    'the stamper finds nothing to number');

select * from finish();
rollback;
