-- Invariant 1 (no silent loss), issue 16: the sleep lock's backlog check must see what committed
-- before the lock was granted, which only READ COMMITTED's fresh snapshot per statement does; a
-- REPEATABLE READ caller would look at its old snapshot and sleep over an event.
begin isolation level repeatable read;
select plan(1);
select throws_ok($$ select streamseal.stamper_sleep_arm() $$, '25000',
    'stamper_sleep_arm: must run under READ COMMITTED, not repeatable read',
    'arming under REPEATABLE READ is refused');
select * from finish();
rollback;
