-- Invariant 1 (no silent loss) with birth lineage: while an expansion's backfill is outstanding,
-- the history it lacks is 'pending_backfill' (expected, informational), not 'deficit', at type
-- and stream level alike; a lane holding a hole after its birth (a loss the checkpoints named)
-- stays a deficit; a baseline type stays a deficit; once the backfill completed, what is still
-- missing is a deficit again.
begin;
select plan(6);
select streamseal.set_service_name('bl-billing');
select streamseal.subscribe_all_tenants(array['bl.old']);
select streamseal.consumed_types_reconcile(true);
select streamseal.subscribe_all_tenants(array['bl.new']);
select streamseal.consumed_types_reconcile(false);

-- The origin holds seqs 1..4 of each type in one stream; this store holds only seq 4 of each.
select streamseal.ingest(array[
    streamseal_test.copy('bl-orders', 4, 4, 'o1', 4, 'bl.new', event_id => streamseal_test.uid(4)),
    streamseal_test.copy('bl-orders', 8, 4, 'p1', 4, 'bl.old', event_id => streamseal_test.uid(8))]);
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where origin = 'bl-orders';

create function pg_temp.fold(ids int[]) returns table (x0 bigint, x1 bigint, n bigint) language sql as $$
    select coalesce(bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)), 0),
           coalesce(bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)), 0), count(i)
    from unnest(ids) i
$$;
create temp table answer on commit drop as
select 't1'::text as tenant, 'bl.new'::text as event_type, f.* from pg_temp.fold('{1,2,3,4}') f
union all select 't1', 'bl.old', f.* from pg_temp.fold('{5,6,7,8}') f;
create function pg_temp.type_reasons() returns setof text language sql as $$
    select c.event_type || ' ' || c.reason
    from streamseal.compare_type_digests('bl-orders', 1, 9,
        array(select tenant from answer order by event_type), array(select event_type from answer order by event_type),
        array(select x0 from answer order by event_type), array(select x1 from answer order by event_type),
        array(select n from answer order by event_type)) c
    order by 1
$$;
select results_eq($$ select distinct r from pg_temp.type_reasons() r order by 1 $$,
                  $$ values ('bl.new pending_backfill'), ('bl.old deficit') $$,
                  'type level: the expansion''s missing history is pending_backfill; the baseline type''s is a deficit');
select results_eq($$
    select c.stream_id || ' ' || c.reason from streamseal.compare_stream_digests('bl-orders', 1, 9,
        array['o1', 'p1'], array['t1', 't1'], array['bl.new', 'bl.old'],
        array[(select x0 from pg_temp.fold('{1,2,3,4}')), (select x0 from pg_temp.fold('{5,6,7,8}'))],
        array[(select x1 from pg_temp.fold('{1,2,3,4}')), (select x1 from pg_temp.fold('{5,6,7,8}'))],
        array[4, 4]::bigint[]) c order by 1 $$,
    $$ values ('o1 pending_backfill'), ('p1 deficit') $$,
    'stream level agrees');

insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq, suspected)
values ('bl-orders', 't1', 'bl.new', 3, 3, 6, '{[5,6)}');
select results_eq($$ select distinct r from pg_temp.type_reasons() r where r like 'bl.new%' $$,
                  $$ values ('bl.new deficit') $$,
                  'a lane with a hole after its birth is a deficit: the checkpoints named a loss');
update streamseal.lanes set suspected = '{}' where origin = 'bl-orders';
select results_eq($$ select distinct r from pg_temp.type_reasons() r where r like 'bl.new%' $$,
                  $$ values ('bl.new pending_backfill') $$, 'without such a hole it is pending_backfill again');

update streamseal.consumed_types set status = 'requested' where event_type = 'bl.new';
select results_eq($$ select distinct r from pg_temp.type_reasons() r where r like 'bl.new%' $$,
                  $$ values ('bl.new pending_backfill') $$, 'requested (in progress) is pending_backfill too');
update streamseal.consumed_types set status = 'complete' where event_type = 'bl.new';
select results_eq($$ select distinct r from pg_temp.type_reasons() r where r like 'bl.new%' $$,
                  $$ values ('bl.new deficit') $$, 'after the backfill completed, what is missing is a deficit');

select * from finish();
rollback;
