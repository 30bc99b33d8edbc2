-- Invariant 13: when dropping superseded rows cannot make room (every waiting row of the origin is
-- needed: at-most-once acceptances, or one lane each), checkpoint_inbox_record refuses the new
-- rows beyond the per-origin cap, in order, and names them, so the inbox records them as rejected
-- instead of holding them; what is waiting is kept whole. Bad arguments are refused with a reason.
begin;
select plan(6);

create temp table reported as
select * from streamseal.checkpoint_inbox_record(
    array['orders', 'orders', 'orders', 'orders', 'orders'],
    array['streamseal.evt.orders.a.t1', 'streamseal.evt.orders.b.t1', 'streamseal.evt.orders.c.t1',
          'streamseal.evt.orders.d.t1', 'streamseal.evt.orders.e.t1'],
    array['\x01', '\x02', '\x03', '\x04', '\x05']::bytea[],
    array[1, 1, 1, 1, 1]::bigint[], array[2, 2, 2, 2, 2]::bigint[],
    array[true, true, true, true, true], true, 3);

select results_eq($$ select origin, superseded, waiting, refused from reported $$,
    $$ values ('orders', 0::bigint, 3::bigint, array[4, 5]) $$,
    'five lanes'' checkpoints against a cap of 3: the last two are refused, by position');
select results_eq($$ select payload from streamseal.checkpoint_inbox order by id $$,
    $$ values ('\x01'::bytea), ('\x02'::bytea), ('\x03'::bytea) $$,
    'the first three are recorded, in order');
select results_eq(
    $$ select refused from streamseal.checkpoint_inbox_record(array['orders'], array['streamseal.evt.orders.f.t1'],
           array['\x06']::bytea[], array[null]::bigint[], array[null]::bigint[], array[true], false, 3) $$,
    $$ values (array[1]) $$,
    'a full origin refuses the next checkpoint');
select is((select count(*)::int from streamseal.checkpoint_inbox), 3, 'what was waiting is kept whole');
select throws_ok(
    $$ select * from streamseal.checkpoint_inbox_record(array['orders'], array['s', 't'], array['\x01']::bytea[],
           array[1]::bigint[], array[1]::bigint[], array[true], false, 3) $$,
    '22023', 'checkpoint_inbox_record: subjects has 2 elements for 1 origins: expected one-dimensional arrays parallel to origins',
    'arrays of different lengths are refused');
select throws_ok(
    $$ select * from streamseal.checkpoint_inbox_record(array['orders'], array['s'], array['\x01']::bytea[],
           array[1]::bigint[], array[1]::bigint[], array[true], false, 0) $$,
    '22023', 'checkpoint_inbox_record: max_per_origin 0 is invalid: expected at least 1',
    'a cap below one is refused');

select * from finish();
rollback;
