-- Invariant 15's reader at the cost issue 19 asks of it (bench projections: run_handler reads the
-- feed once a transaction). read_feed forces custom plans for its range reads, and a function it
-- calls inherits that; a SQL function with a SET clause is never inlined and outside a loop is
-- parsed and planned in every transaction. The helpers a read calls once each are therefore
-- PL/pgSQL and plan with plan_cache_mode = auto (their statements read arrays, catalogs and small
-- keyed tables), and read_feed keeps custom plans for its own range reads. Before feedcost these
-- helpers cost ~1 ms of CPU per read of 500 (README design notes, "Read path").
begin;
select plan(3);

select is(
    (select pg_catalog.array_agg(p.proname::text order by p.proname)
     from pg_catalog.pg_proc p
     join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     join pg_catalog.pg_language l on l.oid = p.prolang
     where n.nspname = 'streamseal'
       and p.proname in ('_feed_require_scope', '_feed_scope_digest', '_feed_membership_digest', '_feed_store_id',
                         '_feed_members', '_feed_members_merge', 'feed_token', '_feed_token_encode')
       and l.lanname = 'plpgsql'),
    array['_feed_members', '_feed_members_merge', '_feed_membership_digest', '_feed_require_scope',
          '_feed_scope_digest', '_feed_store_id', '_feed_token_encode', 'feed_token'],
    'the helpers a read calls once each are PL/pgSQL (plans kept for the session)');

select is(
    (select pg_catalog.array_agg(p.proname::text order by p.proname)
     from pg_catalog.pg_proc p
     join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'streamseal'
       and p.proname in ('_feed_require_scope', '_feed_scope_digest', '_feed_membership_digest', '_feed_store_id',
                         '_feed_members', '_feed_members_merge', 'feed_token', '_feed_token_encode')
       and 'plan_cache_mode=auto' = any (p.proconfig)),
    array['_feed_members', '_feed_members_merge', '_feed_membership_digest', '_feed_require_scope',
          '_feed_scope_digest', '_feed_store_id', '_feed_token_encode', 'feed_token'],
    'they plan with plan_cache_mode = auto, not the forced custom plans of read_feed that calls them');

select ok(
    (select 'plan_cache_mode=force_custom_plan' = any (p.proconfig)
     from pg_catalog.pg_proc p
     join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'streamseal' and p.proname = 'read_feed'),
    'read_feed keeps custom plans for its range reads');

select * from finish();
rollback;
