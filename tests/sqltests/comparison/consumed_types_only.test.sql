-- Invariants 1 and 11: a consumer compares only the event types it consumes. Given
-- consumed_types, a type outside the list is ignored on both sides (the origin's answer for it
-- and this store's copies of it), so an unconsumed type never alarms and never drills down,
-- while a consumed type still shows every difference.
begin;
select plan(6);
select streamseal.set_service_name('cmp-consumed');

-- This store holds kept.type (one event short of the origin) and stale.type (no longer consumed,
-- the origin has nothing of it in the window); the origin also answers foreign.type, never consumed.
select streamseal.ingest(array[
    streamseal_test.copy('cmp-consumed-origin', 1, 1, 'k1', 1, 'kept.type', event_id => streamseal_test.uid(1)),
    streamseal_test.copy('cmp-consumed-origin', 3, 1, 's1', 3, 'stale.type', event_id => streamseal_test.uid(3))]);
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-consumed-origin';

create temp table answer (tenant text, event_type text, x0 bigint, x1 bigint, n bigint) on commit drop;
insert into answer
select 't1', 'kept.type', bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)),
       bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)), count(*)
from unnest(array[1, 2]) i
union all
select 't1', 'foreign.type', hashtextextended(streamseal_test.uid(4)::text, 0), hashtextextended(streamseal_test.uid(4)::text, 1), 1;

create function pg_temp.compare(consumed text[]) returns setof text language sql as $$
    select c.event_type || ':' || c.reason
    from streamseal.compare_type_digests('cmp-consumed-origin', 1, 5,
        array(select tenant from answer order by event_type), array(select event_type from answer order by event_type),
        array(select x0 from answer order by event_type), array(select x1 from answer order by event_type),
        array(select n from answer order by event_type), consumed) c
$$;

select results_eq(
    $$ select * from pg_temp.compare(null) $$,
    $$ values ('foreign.type:deficit'), ('kept.type:deficit'), ('stale.type:local_extra') $$,
    'without a list every type differs: the origin''s foreign.type, the short kept.type, the local stale.type');
select results_eq(
    $$ select * from pg_temp.compare(array['kept.type']) $$,
    $$ values ('kept.type:deficit') $$,
    'consuming kept.type only: its deficit is returned, foreign.type and stale.type are ignored on both sides');
select is_empty(
    $$ select * from pg_temp.compare(array['other.type']) $$,
    'a consumed type neither side holds in the window differs nowhere');
select results_eq(
    $$ select * from pg_temp.compare(array['stale.type', 'kept.type']) $$,
    $$ values ('kept.type:deficit'), ('stale.type:local_extra') $$,
    'a consumed type only this store holds is a local extra');
select is_empty(
    $$ select * from pg_temp.compare('{}') $$,
    'an empty list consumes nothing, so nothing differs (null is how a caller says every type)');
select throws_ok(
    $$ select * from pg_temp.compare(array['kept.type', null]) $$,
    '22023', 'compare_type_digests: consumed_types must name event types (null: every type): expected no null element, got {kept.type,NULL}',
    'a list holding a null is refused: it names no type');

select * from finish();
rollback;
