-- Invariant 12 inside the database: the functions that run with their owner's rights (SECURITY
-- DEFINER) are exactly the stated application entry points that touch tables, and every function
-- of the package searches pg_catalog first and the session's temporary schema last, so a caller's
-- temporary objects can never stand in for a name inside code running with the owner's rights.
begin;
select plan(2);

select set_eq(
    $$ select p.oid::regprocedure::text
       from pg_proc p join pg_namespace ns on ns.oid = p.pronamespace
       where ns.nspname = 'streamseal' and p.prosecdef $$,
    $$ values ('streamseal.append(streamseal.new_event[])'),
              ('streamseal.ingest(streamseal.event_copy[])'),
              ('streamseal.subscribe(text[],text,text[])'),
              ('streamseal.subscribe_all_tenants(text[],text)'),
              ('streamseal.unsubscribe(text[],text,text[])'),
              ('streamseal.unsubscribe_all_tenants(text[],text)'),
              ('streamseal.subscribed(text,text,text)'),
              ('streamseal.service_name()'),
              ('streamseal.read_feed(text[],text[],text,integer)'),
              ('streamseal.register_projection(text,text[],regproc,text[],regproc,boolean)'),
              ('streamseal.register_reactor(text,text[],regproc,text[])'),
              ('streamseal.unregister_handler(text)'),
              ('streamseal.register_feed_projection(text,text[],text[],boolean,boolean)'),
              ('streamseal.register_feed_reactor(text,text[],text[])'),
              ('streamseal.feed_handler_advance(text,text,text,uuid[],bigint[],boolean,integer)'),
              ('streamseal.projection_rebuild_take(text)'),
              ('streamseal.projection_rebuild_replay(text,text,text,text)') $$,
    'the SECURITY DEFINER functions are exactly the stated entry points that read or write tables');
select is_empty(
    $$ select p.oid::regprocedure::text, p.proconfig
       from pg_proc p join pg_namespace ns on ns.oid = p.pronamespace
       where ns.nspname = 'streamseal'
         and (exists (select from unnest(p.proconfig) as c(setting)
                      where c.setting like 'search\_path=%' and c.setting <> 'search_path=pg_catalog, pg_temp')
              or (p.prosecdef and not 'search_path=pg_catalog, pg_temp' = any (coalesce(p.proconfig, '{}')))) $$,
    'every function that sets a search_path (every SECURITY DEFINER one must) sets pg_catalog, pg_temp');

select * from finish();
rollback;
