-- Invariant 8 (issue 21 item 3: checkpoints cost what happened) and liveness: a checkpoint round
-- returns one row per (tenant, event_type) with events in its window and nothing for the quiet
-- pairs, plus exactly one liveness row (null tenant and type) every round, whether the window is
-- empty, active, or the origin never emitted anything. The caller publishes the liveness row as
-- the origin's beat (wire.BeatSubject), so consumers see the origin alive each interval.
begin;
select plan(7);
select streamseal.set_service_name('ckpt-quiet');

select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (0::bigint, 1::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange) $$,
    'an origin that never emitted anything still checkpoints: one liveness row carrying the window');

select streamseal.append(array[
    streamseal_test.own('q1', 1, 'quiet.a', 't1', event_id => streamseal_test.uid(1)),
    streamseal_test.own('q2', 1, 'quiet.b', 't1', event_id => streamseal_test.uid(2)),
    streamseal_test.own('q3', 1, 'quiet.a', 't2', flags => 2, event_id => streamseal_test.uid(3))]);
select streamseal.stamp();
update streamseal.relay_state set published_through = 3;
select results_eq(
    $$ select window_from, window_to, tenant, event_type, n from streamseal.next_checkpoint() $$,
    $$ values (1::bigint, 4::bigint, null::text, null::text, 0::bigint), (1, 4, 't1', 'quiet.a', 1),
              (1, 4, 't1', 'quiet.b', 1), (1, 4, 't2', 'quiet.a', 0) $$,
    'the first window carries the liveness row and the three active pairs');

select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 4::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange) $$,
    'a quiet window [4, 4) repeats no pair: the liveness row alone');
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 4::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange) $$,
    'the next quiet window is the same empty window, the liveness row alone again');

select streamseal.append(array[streamseal_test.own('q2', 2, 'quiet.b', 't1', event_id => streamseal_test.uid(4))]);
select streamseal.stamp();
update streamseal.relay_state set published_through = 4;
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 5::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (4, 5, 't1', 'quiet.b', 1, 2, 2, '{}') $$,
    'one active pair counts; the pairs quiet in this window are not repeated');

-- The row count of a quiet round does not grow with the pairs ever numbered.
select streamseal.append(array(
    select streamseal_test.own('m' || i, 1, 'quiet.c', 'tenant-' || i, event_id => streamseal_test.uid(100 + i))
    from generate_series(1, 200) i order by i));
select streamseal.stamp();
update streamseal.relay_state set published_through = 204;
select is((select count(*) from streamseal.next_checkpoint())::int, 201,
    'fixture: a window with 200 active pairs carries 200 rows and the liveness row');
select is((select count(*) from streamseal.next_checkpoint())::int, 1,
    'the quiet window after it carries one row, whatever the pairs ever numbered (203 here)');

select * from finish();
rollback;
