-- Invariant 1 (liveness): a checkpoint publishes even when its window is empty: one heartbeat per
-- (tenant, event_type) this origin ever numbered, so a consumer confirms a tail loss before a
-- quiet period, and a liveness beat even when the origin never emitted anything.
begin;
select plan(5);
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
    $$ values (1::bigint, 4::bigint, 't1'::text, 'quiet.a'::text, 1::bigint), (1, 4, 't1', 'quiet.b', 1),
              (1, 4, 't2', 'quiet.a', 0) $$,
    'fixture: the first window carries the three pairs');

select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 4::bigint, 't1'::text, 'quiet.a'::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (4, 4, 't1', 'quiet.b', 0, null, null, '{}'),
              (4, 4, 't2', 'quiet.a', 0, null, null, '{}') $$,
    'a quiet window [4, 4) heartbeats every known (tenant, type): n 0, no range, no at-most-once');
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 4::bigint, 't1'::text, 'quiet.a'::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (4, 4, 't1', 'quiet.b', 0, null, null, '{}'),
              (4, 4, 't2', 'quiet.a', 0, null, null, '{}') $$,
    'the next quiet window is the same empty window, heartbeating again');

select streamseal.append(array[streamseal_test.own('q2', 2, 'quiet.b', 't1', event_id => streamseal_test.uid(4))]);
select streamseal.stamp();
update streamseal.relay_state set published_through = 4;
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (4::bigint, 5::bigint, 't1'::text, 'quiet.a'::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (4, 5, 't1', 'quiet.b', 1, 2, 2, '{}'),
              (4, 5, 't2', 'quiet.a', 0, null, null, '{}') $$,
    'one active pair counts while the quiet ones heartbeat in the same window');

select * from finish();
rollback;
