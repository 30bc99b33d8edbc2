-- Invariants 4, 6 and 10: the application role reads the status tables (what `streamseal status`
-- reads) and holds no other privilege on any table, sequence or schema streamseal keeps: every
-- write goes through a function that owns its rule, and River's schema is the control plane's.
begin;
select plan(5);

select set_eq(
    $$ select c.relname::text, p.privilege
       from pg_class c
       cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) as p(privilege)
       where c.relnamespace = 'streamseal'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
         and has_table_privilege('streamseal_application', c.oid, p.privilege) $$,
    $$ values ('known_origins', 'SELECT'), ('seals', 'SELECT'), ('lanes', 'SELECT'), ('repair_ledger', 'SELECT'),
              ('loss_reports', 'SELECT'), ('consumed_types', 'SELECT'), ('broadcast_answers', 'SELECT'),
              ('handlers', 'SELECT'), ('handler_failures', 'SELECT'), ('coverage_findings', 'SELECT'),
              ('projection_held', 'SELECT') $$,
    'the application role holds SELECT on the status tables and nothing else on any table');
select is_empty(
    $$ select c.relname from pg_class c
       where c.relnamespace = 'streamseal'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
         and has_any_column_privilege('streamseal_application', c.oid, 'INSERT, UPDATE, REFERENCES') $$,
    'the application role holds no column-level write privilege either');
select is_empty(
    $$ select c.relname from pg_class c
       where c.relnamespace = 'streamseal'::regnamespace
         and case when c.relkind = 'S' then has_sequence_privilege('streamseal_application', c.oid, 'USAGE, SELECT, UPDATE') end $$,
    'the application role holds no privilege on any sequence');
select results_eq(
    $$ select has_schema_privilege('streamseal_application', 'streamseal', 'USAGE'),
              has_schema_privilege('streamseal_application', 'streamseal', 'CREATE') $$,
    $$ values (true, false) $$,
    'the application role uses schema streamseal and cannot create in it');
select ok(not has_schema_privilege('streamseal_application', 'streamseal_river', 'USAGE'),
    'the application role cannot reach River''s schema');

select * from finish();
rollback;
