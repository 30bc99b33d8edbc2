-- Invariant 12 inside the database: a caller's temporary objects never run with the owner's
-- rights. Postgres searches the session's temporary schema first unless search_path lists it, so
-- with search_path = '' a temporary domain named "text" stood in for pg_catalog.text inside
-- SECURITY DEFINER code, and its CHECK function ran as the owner (a superuser here). Each entry
-- point is called for the first time in this session while such a domain exists.
begin;
select plan(2);
select streamseal.set_service_name('privileges-shadow');
create role privileges_shadow_app nologin;
grant streamseal_application to privileges_shadow_app;
grant usage on schema streamseal_test to privileges_shadow_app; -- the row builders, nothing else
set local role privileges_shadow_app;

create temp table shadow_log (ran_as pg_catalog.text);
create function pg_temp.shadow_check(value pg_catalog.text) returns boolean language plpgsql as $f$
begin
    if current_user <> 'privileges_shadow_app' then
        insert into pg_temp.shadow_log values (current_user);
    end if;
    return true;
end
$f$;
create domain pg_temp.text as pg_catalog.text check (pg_temp.shadow_check(value));
-- No pgTAP call while the domain exists: a function compiled now would keep the domain.
do $calls$
begin
    perform streamseal.service_name();
    perform streamseal.append(array[streamseal_test.own('ps-s1', 1)]);
    perform streamseal.append('t1', 'ps-s1', 2, 'thing.happened', '\x7b7d'::bytea);
    perform streamseal.ingest(array[streamseal_test.copy('privileges-shadow-src', 1, 1, 'ps-c1', 1)]);
    perform streamseal.subscribe_all_tenants(array['thing.happened'], 'privileges-shadow-src');
    perform streamseal.subscribed('privileges-shadow-src', 'acme', 'thing.happened');
    perform streamseal.unsubscribe_all_tenants(array['thing.happened'], 'privileges-shadow-src');
    perform streamseal.version();
exception when others then
    insert into pg_temp.shadow_log values ('call failed: ' || sqlerrm);
end
$calls$;
drop domain pg_temp.text;
drop function pg_temp.shadow_check(pg_catalog.text);
reset role;

select is_empty($$ select ran_as from pg_temp.shadow_log $$,
    'no temporary object of the caller ran, and every entry point worked, while it shadowed text');
select is((select count(*)::int from streamseal.events where stream_id in ('ps-s1', 'ps-c1')), 3,
    'the calls stored their events');

select * from finish();
rollback;
