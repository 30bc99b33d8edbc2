-- Invariant 1 (no silent loss), issue 16: a loop about to sleep takes the sleep lock and then looks
-- for committed own events (here its own transaction's, which it sees); finding one it keeps no lock
-- and says 'work', finding none it holds the lock, and an append made while it holds it notifies.
-- The lock is a session lock: it outlives this suite's rollback, so the suite gives it back.
begin;
select plan(6);
select streamseal.set_service_name('stamp-sleep');

select streamseal.append(array[streamseal_test.own('s', 1, event_id => streamseal_test.uid(1))]);
select is(streamseal.stamper_sleep_arm(), 'work', 'an event waits: stamp before sleeping');
select is((select count(*)::int from pg_locks l
           where l.locktype = 'advisory' and l.pid = pg_backend_pid() and l.mode = 'ExclusiveLock'), 0,
    'finding work, it keeps no sleep lock');

select results_eq($$ select stamped from streamseal.stamp() $$, $$ values (1) $$, 'stamped');
select is(streamseal.stamper_sleep_arm(), 'armed', 'nothing waits: sleep holding the lock');
select is(streamseal.stamper_sleep_release(), true, 'the lock was held, and is given back');
select throws_ok($$ select streamseal.stamper_sleep_arm(null) $$, '22023',
    'stamper_sleep_arm: check_backlog is null: expected true (a stamping loop) or false (a yielding one)',
    'a null check_backlog is refused');

select * from finish();
rollback;
