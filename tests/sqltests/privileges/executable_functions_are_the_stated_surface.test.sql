-- Invariants 6, 9 and 12 rest on a small door: the functions the application role may execute
-- are exactly the stated surface below, and PUBLIC executes nothing in schema streamseal, so a new
-- function is private until privileges.sql grants it on purpose. Changing this list changes the
-- application surface: bump streamseal.version() with it (pinned here so the two move together).
begin;
select plan(4);

select set_eq(
    $$ select p.oid::regprocedure::text
       from pg_proc p join pg_namespace ns on ns.oid = p.pronamespace
       where ns.nspname = 'streamseal' and has_function_privilege('streamseal_application', p.oid, 'EXECUTE') $$,
    $$ values ('streamseal.append(streamseal.new_event[])'),
              ('streamseal.append(text,text,bigint,text,bytea,jsonb,integer,uuid)'),
              ('streamseal.ingest(streamseal.event_copy[])'),
              ('streamseal.subscribe(text[],text,text[])'),
              ('streamseal.subscribe_all_tenants(text[],text)'),
              ('streamseal.unsubscribe(text[],text,text[])'),
              ('streamseal.unsubscribe_all_tenants(text[],text)'),
              ('streamseal.subscribe(text[],text)'),
              ('streamseal.unsubscribe(text[],text)'),
              ('streamseal.subscribed(text,text,text)'),
              ('streamseal.service_name()'),
              ('streamseal.version()'),
              ('streamseal.read_feed(text[],text[],text,integer)'),
              ('streamseal.feed_token(text)'),
              ('streamseal.register_projection(text,text[],regproc,text[],regproc,boolean)'),
              ('streamseal.register_reactor(text,text[],regproc,text[])'),
              ('streamseal.unregister_handler(text)'),
              ('streamseal.register_feed_projection(text,text[],text[],boolean,boolean)'),
              ('streamseal.register_feed_reactor(text,text[],text[])'),
              ('streamseal.feed_handler_advance(text,text,text,uuid[],bigint[],boolean,integer)'),
              ('streamseal.projection_rebuild_take(text)'),
              ('streamseal.projection_rebuild_replay(text,text,text,text)') $$,
    'the application role executes exactly the stated surface');
select is_empty(
    $$ select p.oid::regprocedure::text
       from pg_proc p join pg_namespace ns on ns.oid = p.pronamespace
       where ns.nspname = 'streamseal' and has_function_privilege('public', p.oid, 'EXECUTE') $$,
    'PUBLIC executes no function of schema streamseal');
select is_empty(
    $$ select p.oid::regprocedure::text
       from pg_proc p join pg_namespace ns on ns.oid = p.pronamespace
       where ns.nspname = 'streamseal' and p.proname like '\_%'
         and has_function_privilege('streamseal_application', p.oid, 'EXECUTE') $$,
    'no private (_-prefixed) helper is executable by the application role');
select is(streamseal.version(), '0.5.0', 'the surface above is version 0.5.0 of the code package');

select * from finish();
rollback;
