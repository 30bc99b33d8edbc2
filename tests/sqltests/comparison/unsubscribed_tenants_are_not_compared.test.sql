-- Invariants 1 and 11: a consumer subscribed to some tenants compares only those. With
-- subscribed_tenants_only, a tenant it does not consume is never a deficit (so never repaired
-- into this store), even when the origin grants and answers it, at type and stream level; a
-- subscribed tenant still shows every difference.
begin;
select plan(4);
select streamseal.set_service_name('cmp-tenants');
select streamseal.subscribe(array['t.type'], 'cmp-tenants-origin', array['acme']);

-- This store holds acme's event 1; the origin answers acme with events 1 and 2, globex with 3.
select streamseal.ingest(array[
    streamseal_test.copy('cmp-tenants-origin', 1, 1, 's1', 1, 't.type', tenant => 'acme', event_id => streamseal_test.uid(1))]);
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-tenants-origin';

create temp table answer (stream_id text, tenant text, event_type text, x0 bigint, x1 bigint, n bigint) on commit drop;
insert into answer
select 's1', 'acme', 't.type', bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)),
       bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)), count(*)
from unnest(array[1, 2]) i
union all
select 's2', 'globex', 't.type', hashtextextended(streamseal_test.uid(3)::text, 0), hashtextextended(streamseal_test.uid(3)::text, 1), 1;

create function pg_temp.compare_types(only_subscribed boolean) returns setof text language sql as $$
    select c.tenant || ':' || c.reason
    from streamseal.compare_type_digests('cmp-tenants-origin', 1, 5,
        array(select tenant from answer order by tenant), array(select event_type from answer order by tenant),
        array(select x0 from answer order by tenant), array(select x1 from answer order by tenant),
        array(select n from answer order by tenant), array['t.type'], subscribed_tenants_only => only_subscribed) c
    order by 1
$$;
create function pg_temp.compare_streams(only_subscribed boolean) returns setof text language sql as $$
    select c.stream_id || ':' || c.tenant || ':' || c.reason
    from streamseal.compare_stream_digests('cmp-tenants-origin', 1, 5,
        array(select stream_id from answer order by stream_id), array(select tenant from answer order by stream_id),
        array(select event_type from answer order by stream_id),
        array(select x0 from answer order by stream_id), array(select x1 from answer order by stream_id),
        array(select n from answer order by stream_id), subscribed_tenants_only => only_subscribed) c
    order by 1
$$;

select results_eq($$ select * from pg_temp.compare_types(false) $$, $$ values ('acme:deficit'), ('globex:deficit') $$,
    'fixture: without the filter globex is a deficit too');
select results_eq($$ select * from pg_temp.compare_types(true) $$, $$ values ('acme:deficit') $$,
    'type level: only the subscribed tenant is compared');
select results_eq($$ select * from pg_temp.compare_streams(false) $$, $$ values ('s1:acme:deficit'), ('s2:globex:deficit') $$,
    'fixture: stream level without the filter names globex''s stream');
select results_eq($$ select * from pg_temp.compare_streams(true) $$, $$ values ('s1:acme:deficit') $$,
    'stream level: only the subscribed tenant''s stream is compared');

select * from finish();
rollback;
