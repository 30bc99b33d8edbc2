-- Invariant 9 (and the lesson "a lost compare-and-swap on the checkpoint watermark returns
-- nothing, never an empty window"): while one control-plane replica holds the checkpoint window
-- (its transaction has not committed), another replica's next_checkpoint() skips the locked row
-- and returns no rows at all, so it publishes nothing; an empty window published by the loser
-- would fan identical repairs across the fleet.
--
-- A second session cannot be opened from a pgTAP suite (SKIP LOCKED never skips the caller's
-- own lock), so the race itself is proven with two connections by the control plane's checkpoint
-- tests in Go. What this suite proves in one session: the window's advance is held by the
-- caller's transaction until it commits; a rolled-back window is handed out again, whole; a
-- caller that finds no row it can lock gets no rows (not an empty window) and moves nothing
-- (the row is taken out of reach here, which SKIP LOCKED treats exactly like a row another
-- transaction holds); and the holder itself never gets the same window twice.
begin;
select plan(6);
select streamseal.set_service_name('ckpt-skip');

select streamseal.append(array(
    select streamseal_test.own('k1', i, 'skip.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 5) i order by i));
select streamseal.stamp();
update streamseal.relay_state set published_through = 5;

savepoint before_window;
select results_eq(
    $$ select window_from, window_to, n from streamseal.next_checkpoint() where tenant is not null $$,
    $$ values (0::bigint, 6::bigint, 5::bigint) $$,
    'the first caller takes the window [0, 6)');
rollback to savepoint before_window;
release savepoint before_window;

-- Called plainly, not inside a pgTAP assertion (which runs its query in a subtransaction), so
-- the row version below is the top-level transaction's.
create temp table taken on commit drop as select * from streamseal.next_checkpoint();
select results_eq(
    $$ select window_from, window_to, n from taken where tenant is not null $$,
    $$ values (0::bigint, 6::bigint, 5::bigint) $$,
    'a caller that rolled back (failed to publish) left the window whole for the next caller');
select ok(
    (select c.xmin = pg_catalog.xid(pg_catalog.pg_current_xact_id()) from streamseal.checkpoint_state c),
    'the advanced watermark is uncommitted work of the caller''s transaction: the row stays locked until it commits');
select results_eq(
    $$ select window_from, window_to, n from streamseal.next_checkpoint() $$,
    $$ values (6::bigint, 6::bigint, 0::bigint) $$,
    'the holder''s next call gets the next (empty) window, never [0, 6) again');

-- Out of reach: the row cannot be locked.
delete from streamseal.checkpoint_state;
select is_empty(
    $$ select * from streamseal.next_checkpoint() $$,
    'a caller that cannot lock the watermark row gets no rows at all: no window, no liveness row');
select is_empty(
    $$ select from streamseal.checkpoint_state $$,
    'and it makes no watermark of its own');

select * from finish();
rollback;
