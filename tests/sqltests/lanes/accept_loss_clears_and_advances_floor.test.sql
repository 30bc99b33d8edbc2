-- Invariant 6: a hole clears only by its own arrival or by a recorded acceptance. accept_loss
-- (what the origin answered it cannot serve: reaped ephemeral, absent, ...) takes the accepted
-- type_seqs out of suspected, confirmed and requested and moves the floor over them, up to the
-- next hole and never past it; with the last hole accepted the floor reaches everything
-- announced, and later checkpoints do not raise the accepted loss again. Nothing beyond what
-- checkpoints announced is accepted: that would hide a future loss (invariant 1).
begin;
select plan(10);
select streamseal.set_service_name('lane-accept');
select streamseal.subscribe_all_tenants(array['loss.type'], 'accept-origin');

-- Announced 1..10; 4 and 7 never arrive.
select streamseal.ingest(array(
    select streamseal_test.copy('accept-origin', i, i, 'l1', i, 'loss.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 10) i where i not in (4, 7)));
select streamseal.verify_checkpoint('accept-origin', 1, 11, 'loss.type', array['t1'],
    array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]);
select results_eq(
    $$ select floor, confirmed, to_request from streamseal.verify_checkpoint('accept-origin', 11, 11, 'loss.type',
           array['t1'], array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (3::bigint, '{[4,5),[7,8)}'::int8multirange, '{[4,5),[7,8)}'::int8multirange) $$,
    'fixture: 4 and 7 are confirmed holes with the floor at 3');
select streamseal.mark_requested('accept-origin', 't1', 'loss.type', '{[4,5),[7,8)}');

-- The origin answers that 4 was a reaped ephemeral event.
select streamseal.accept_loss('accept-origin', 't1', 'loss.type', '{[4,5)}', 'reaped_ephemeral');
select results_eq(
    $$ select floor, accepted_losses, suspected, confirmed, requested from streamseal.lanes
       where origin = 'accept-origin' and tenant = 't1' and event_type = 'loss.type' $$,
    $$ values (6::bigint, '{[4,5)}'::int8multirange, '{}'::int8multirange, '{[7,8)}'::int8multirange, '{[7,8)}'::int8multirange) $$,
    'accepting 4 clears it everywhere and moves the floor to 6, stopping below the hole at 7');

-- 7 is absent at the origin too (closed).
select streamseal.accept_loss('accept-origin', 't1', 'loss.type', '{[7,8)}', 'absent');
select results_eq(
    $$ select floor, accepted_losses, suspected, confirmed, requested from streamseal.lanes
       where origin = 'accept-origin' and tenant = 't1' and event_type = 'loss.type' $$,
    $$ values (10::bigint, '{[4,5),[7,8)}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'accepting the last hole moves the floor to everything announced: 10');
select results_eq(
    $$ select floor, suspected, confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('accept-origin', 11, 11,
           'loss.type', array['t1'], array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (10::bigint, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange) $$,
    'the next checkpoint raises no accepted loss again');

-- Accepting a suspected hole does not need a confirmation first, and promotes nothing: 12 and 14
-- are missing from the window 11..15; only 12 is accepted (never_existed).
select streamseal.ingest(array(
    select streamseal_test.copy('accept-origin', i, i, 'l1', i, 'loss.type', event_id => streamseal_test.uid(i))
    from generate_series(11, 15) i where i not in (12, 14)));
select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('accept-origin', 11, 16, 'loss.type', array['t1'],
           array[5]::bigint[], array[11]::bigint[], array[15]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (11::bigint, '{[12,13),[14,15)}'::int8multirange) $$,
    'fixture: 12 and 14 suspected, floor 11');
select streamseal.accept_loss('accept-origin', 't1', 'loss.type', '{[12,13)}', 'never_existed');
select results_eq(
    $$ select floor, suspected, confirmed from streamseal.lanes where origin = 'accept-origin' and tenant = 't1' $$,
    $$ values (13::bigint, '{[14,15)}'::int8multirange, '{}'::int8multirange) $$,
    'accepting the suspected 12 moves the floor to 13; 14 stays suspected, not confirmed');

-- A hole that arrived since the last checkpoint is no longer a hole when a loss is accepted.
select streamseal.ingest(array[streamseal_test.copy('accept-origin', 14, 14, 'l1', 14, 'loss.type', event_id => streamseal_test.uid(14))]);
select streamseal.accept_loss('accept-origin', 't1', 'loss.type', '{[12,13)}', 'never_existed');
select results_eq(
    $$ select floor, suspected from streamseal.lanes where origin = 'accept-origin' and tenant = 't1' $$,
    $$ values (15::bigint, '{}'::int8multirange) $$,
    'accepting again (idempotent) also passes the arrived 14: floor 15, nothing suspected');

-- The origin's counter is at 15; type_seqs above it "never existed" yet, but may be emitted
-- later. Accepting them now would hide their loss for good: they are not accepted.
select streamseal.accept_loss('accept-origin', 't1', 'loss.type', '{[12,13),[16,20)}', 'never_existed');
select results_eq(
    $$ select accepted_losses from streamseal.lanes where origin = 'accept-origin' and tenant = 't1' $$,
    $$ values ('{[4,5),[7,8),[12,13)}'::int8multirange) $$,
    'type_seqs beyond what checkpoints announced are not accepted');
select results_eq(
    $$ select floor, suspected from streamseal.verify_checkpoint('accept-origin', 16, 18, 'loss.type', array['t1'],
           array[2]::bigint[], array[16]::bigint[], array[17]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (15::bigint, '{[16,18)}'::int8multirange) $$,
    'so when 16 and 17 are emitted later and lost, they are holes');
select streamseal.accept_loss('accept-origin', 't9', 'loss.type', '{[1,5)}', 'absent');
select is_empty(
    $$ select from streamseal.lanes where origin = 'accept-origin' and tenant = 't9' $$,
    'on a lane no checkpoint announced there is nothing to accept: no lane is made');

select * from finish();
rollback;
