-- Invariants 1 and 6: an at-most-once occurrence that was never delivered is the behaviour it was
-- declared with, not a loss: the origin's checkpoint names its type_seq (flag set by the real
-- append path) and the consumer accepts it, so it never becomes a hole and the floor moves over
-- it. Proven end to end: the checkpoint rows the origin's next_checkpoint() returns are the
-- consumer's verify_checkpoint() input.
begin;
select plan(5);

-- The origin 'amo-origin': tenant t1, type tick.fired, type_seqs 1..6 with 3 and 5 at-most-once;
-- tenant t2, type_seqs 1..3, all at-most-once.
select streamseal.set_service_name('amo-origin');
select streamseal.append(array(
    select streamseal_test.own('a1', i, 'tick.fired', 't1', flags => case when i in (3, 5) then 2 else 0 end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 6) i order by i));
select streamseal.append(array(
    select streamseal_test.own('a2', i, 'tick.fired', 't2', flags => 2, event_id => streamseal_test.uid(10 + i))
    from generate_series(1, 3) i order by i));
select streamseal.stamp();
update streamseal.relay_state set published_through = 9;
-- The pairs' rows (the liveness row, null tenant, is the origin's beat, not a pair's checkpoint).
create temp table checkpoint_rows on commit drop as select * from streamseal.next_checkpoint() where tenant is not null;

select results_eq(
    $$ select tenant, event_type, n, first_type_seq, last_type_seq, at_most_once from checkpoint_rows order by tenant $$,
    $$ values ('t1'::text, 'tick.fired'::text, 4::bigint, 1::bigint, 6::bigint, '{[3,4),[5,6)}'::int8multirange),
              ('t2', 'tick.fired', 0, 1, 3, '{[1,4)}') $$,
    'the origin''s checkpoint leaves the occurrences out of n and names them in at_most_once');

-- The same database now plays the consumer 'amo-consumer' (it holds the events as copies of
-- 'amo-origin'): occurrence 3 of t1 and all of t2 were never delivered; occurrence 5 was.
-- Own events keep their numbers in own_numbers (issue 16); as copies they carry them in the row.
alter table streamseal.events disable trigger user;
update streamseal.events e set origin_seq = n.origin_seq, type_seq = n.type_seq
from streamseal.own_numbers n where n.event_id = e.event_id;
delete from streamseal.own_numbers;
alter table streamseal.events enable trigger user;
delete from streamseal.service;
select streamseal.set_service_name('amo-consumer');
select streamseal.subscribe_all_tenants(array['tick.fired'], 'amo-origin');
delete from streamseal.events where origin = 'amo-origin' and ((tenant = 't1' and type_seq = 3) or tenant = 't2');

create temp table verified on commit drop as
select v.* from streamseal.verify_checkpoint('amo-origin',
    (select min(window_from) from checkpoint_rows), (select min(window_to) from checkpoint_rows), 'tick.fired',
    (select array_agg(tenant order by tenant) from checkpoint_rows),
    (select array_agg(n order by tenant) from checkpoint_rows),
    (select array_agg(first_type_seq order by tenant) from checkpoint_rows),
    (select array_agg(last_type_seq order by tenant) from checkpoint_rows),
    (select array_agg(at_most_once order by tenant) from checkpoint_rows)) v;

select results_eq(
    $$ select tenant, floor, suspected, confirmed, to_request from verified order by tenant $$,
    $$ values ('t1'::text, 6::bigint, '{}'::int8multirange, '{}'::int8multirange, '{}'::int8multirange),
              ('t2', 3, '{}', '{}', '{}') $$,
    'the undelivered occurrences are no holes: both floors move to the last announced type_seq');
select results_eq(
    $$ select tenant, accepted, accepted_losses from streamseal.lanes where origin = 'amo-origin' order by tenant $$,
    $$ values ('t1'::text, '{}'::int8multirange, '{}'::int8multirange), ('t2', '{}', '{}') $$,
    'the occurrences lie below the floors now: the working set keeps none, and none is a loss');

-- A quiet checkpoint after that: nothing is suspected, in particular not the undelivered ones.
select results_eq(
    $$ select tenant, floor, suspected, confirmed from streamseal.verify_checkpoint('amo-origin', 10, 10, 'tick.fired',
           array['t1', 't2'], array[0, 0]::bigint[], array[null, null]::bigint[], array[null, null]::bigint[],
           array['{}', '{}']::int8multirange[]) $$,
    $$ values ('t1'::text, 6::bigint, '{}'::int8multirange, '{}'::int8multirange), ('t2', 3, '{}', '{}') $$,
    'and the next quiet checkpoint finds nothing either');

-- Control: the same loss with no at-most-once declaration is a hole.
select results_eq(
    $$ select tenant, floor, suspected from streamseal.verify_checkpoint('amo-origin', 10, 13, 'tick.fired', array['t3'],
           array[3]::bigint[], array[1]::bigint[], array[3]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('t3'::text, 0::bigint, '{[1,4)}'::int8multirange) $$,
    'control: undelivered type_seqs 1..3 of tenant t3, not declared at-most-once, are suspected');

select * from finish();
rollback;
