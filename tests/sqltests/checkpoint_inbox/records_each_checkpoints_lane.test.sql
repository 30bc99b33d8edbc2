-- Invariant 15 (issue 17, migration 040): checkpoint_inbox_record names each waiting checkpoint's
-- lane (tenant, event type), so a lane-set mark can wait for a checkpoint of the lane it knows is
-- coming (lane_rounds.sql); a caller that names none (an older one) records rows that hold
-- nothing back, and lane arrays not parallel to the run are refused.
begin;
select plan(3);

select streamseal.checkpoint_inbox_record(array['lanes-o', 'lanes-o'],
    array['streamseal.evt.lanes-o.t1.a', 'streamseal.evt.lanes-o.t2.a'], array['\x01', '\x02']::bytea[],
    array[1, 4]::bigint[], array[3, 9]::bigint[], array[true, true], true, 10,
    array['t1', 't2'], array['a', 'a']);
select streamseal.checkpoint_inbox_record(array['lanes-o'], array['streamseal.evt.lanes-o.t1.b'], array['\x03']::bytea[],
    array[1]::bigint[], array[2]::bigint[], array[true], true, 10);
select results_eq(
    $$ select tenant, event_type, first_type_seq from streamseal.checkpoint_inbox where origin = 'lanes-o' order by id $$,
    $$ values ('t1'::text, 'a'::text, 1::bigint), ('t2', 'a', 4), (null, null, 1) $$,
    'each recorded checkpoint names its lane; a caller naming none records none');
select throws_ok(
    $$ select * from streamseal.checkpoint_inbox_record(array['lanes-o'], array['s'], array['\x01']::bytea[],
           array[1]::bigint[], array[1]::bigint[], array[true], false, 3, array['t1', 't2'], array['a']) $$,
    '22023', 'checkpoint_inbox_record: tenants has 2 elements for 1 origins: expected one-dimensional arrays parallel to origins',
    'tenants not parallel to the run are refused');
select throws_ok(
    $$ select * from streamseal.checkpoint_inbox_record(array['lanes-o'], array['s'], array['\x01']::bytea[],
           array[1]::bigint[], array[1]::bigint[], array[true], false, 3, array['t1'], array[]::text[]) $$,
    '22023', 'checkpoint_inbox_record: event_types has 0 elements for 1 origins: expected one-dimensional arrays parallel to origins',
    'event types not parallel to the run are refused');

select * from finish();
rollback;
