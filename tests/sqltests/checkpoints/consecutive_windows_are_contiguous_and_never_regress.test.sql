-- Invariant 1 (and the lesson "the watermark never regresses"): consecutive checkpoint windows
-- are contiguous, half-open [from, to) with each to the next from, so no origin_seq is left out
-- or covered twice; a window never ends below where it starts, even when the relay's position
-- moves backwards (a relay reset), and a quiet window is empty, never negative.
begin;
select plan(7);
select streamseal.set_service_name('ckpt-contiguous');

select streamseal.append(array(
    select streamseal_test.own('c' || (i % 3), i, 'contig.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 30) i order by i));
select streamseal.stamp();

create temp table windows (call integer, window_from bigint, window_to bigint, n bigint) on commit drop;
-- The relay advances in uneven steps, stalls, goes back (a reset to an older position), advances.
update streamseal.relay_state set published_through = 4;
insert into windows select 1, c.window_from, c.window_to, c.n from streamseal.next_checkpoint() c where c.tenant is not null or c.window_from = c.window_to;
update streamseal.relay_state set published_through = 17;
insert into windows select 2, c.window_from, c.window_to, c.n from streamseal.next_checkpoint() c where c.tenant is not null or c.window_from = c.window_to;
insert into windows select 3, c.window_from, c.window_to, c.n from streamseal.next_checkpoint() c where c.tenant is not null or c.window_from = c.window_to;
update streamseal.relay_state set published_through = 9;
insert into windows select 4, c.window_from, c.window_to, c.n from streamseal.next_checkpoint() c where c.tenant is not null or c.window_from = c.window_to;
update streamseal.relay_state set published_through = 30;
insert into windows select 5, c.window_from, c.window_to, c.n from streamseal.next_checkpoint() c where c.tenant is not null or c.window_from = c.window_to;

select results_eq(
    $$ select call, window_from, window_to from windows order by call $$,
    $$ values (1, 0::bigint, 5::bigint), (2, 5, 18), (3, 18, 18), (4, 18, 18), (5, 18, 31) $$,
    'the windows are [0,5) [5,18) [18,18) [18,18) [18,31): each starts where the last ended');
select is_empty(
    $$ select from windows w join windows prior on prior.call = w.call - 1
       where w.window_from <> prior.window_to $$,
    'no window starts anywhere but at the previous window''s end');
select is_empty(
    $$ select from windows where window_to < window_from $$,
    'no window ends before it starts, even after the relay moved back');
select is((select sum(n) from windows)::bigint, 30::bigint,
    'the windows together count every own event exactly once');
select is((select published_through from streamseal.checkpoint_state), 31::bigint,
    'the watermark stands at the last window end');

-- The stamper's counter cannot go back, but the watermark would not follow it either: a window
-- taken with both positions below it is empty at the watermark.
update streamseal.relay_state set published_through = 2;
select results_eq(
    $$ select distinct window_from, window_to, n from streamseal.next_checkpoint() $$,
    $$ values (31::bigint, 31::bigint, 0::bigint) $$,
    'with the relay reset to 2 the window is the empty [31, 31), not [31, 3)');
select is((select published_through from streamseal.checkpoint_state), 31::bigint,
    'the watermark never regresses');

select * from finish();
rollback;
