-- Invariants 4, 6 and 9 rest on code and schema the control plane cannot change (issue 14 item
-- 6): a role granted streamseal_control runs the engine but owns nothing. It creates nothing in
-- streamseal's or River's schema, alters, drops, indexes or truncates no table, replaces or
-- drops no function, moves no schema version and creates no role; `streamseal migrate` runs as
-- the owner.
begin;
select plan(16);
create role privileges_ddl_control nologin;
grant streamseal_control to privileges_ddl_control;
set local role privileges_ddl_control;

select throws_ok(
    $$ create table streamseal.sneaky (a int) $$,
    '42501', 'permission denied for schema streamseal', 'the control role creates no table in schema streamseal');
select throws_ok(
    $$ create function streamseal.sneaky() returns int language sql as 'select 1' $$,
    '42501', 'permission denied for schema streamseal', 'the control role creates no function in schema streamseal');
select throws_ok(
    $$ create or replace function streamseal.version() returns text language sql as $f$ select 'forged' $f$ $$,
    '42501', 'permission denied for schema streamseal', 'the control role replaces no function of the code package');
select throws_ok(
    $$ drop function streamseal.version() $$,
    '42501', 'must be owner of function streamseal.version', 'the control role drops no function of the code package');
select throws_ok(
    $$ alter table streamseal.events add column sneaky int $$,
    '42501', 'must be owner of table events', 'the control role alters no table');
select throws_ok(
    $$ alter table streamseal.events disable trigger user $$,
    '42501', 'must be owner of table events', 'the control role disables no digest trigger');
select throws_ok(
    $$ create index on streamseal.events (tenant) $$,
    '42501', 'must be owner of table events', 'the control role creates no index');
select throws_ok(
    $$ drop table streamseal.repair_ledger $$,
    '42501', 'must be owner of table repair_ledger', 'the control role drops no table');
select throws_ok(
    $$ truncate streamseal.events $$,
    '42501', 'permission denied for table events', 'the control role truncates no table (digests would go stale)');
select throws_ok(
    $$ update streamseal.schema_version set version = 0 $$,
    '42501', 'permission denied for table schema_version', 'the control role moves no schema version');
select throws_ok(
    $$ create table streamseal_river.sneaky (a int) $$,
    '42501', 'permission denied for schema streamseal_river', 'the control role creates no table in River''s schema');
select throws_ok(
    $$ delete from streamseal_river.river_migration $$,
    '42501', 'permission denied for table river_migration', 'the control role rewrites no River migration record');
select throws_ok(
    $$ create role privileges_ddl_sneaky $$,
    '42501', 'permission denied to create role', 'the control role creates no role');
reset role;

select is_empty(
    $$ select c.oid::regclass::text, p.privilege
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       cross join unnest(array['TRUNCATE', 'REFERENCES', 'TRIGGER']) as p(privilege)
       where n.nspname in ('streamseal', 'streamseal_river') and c.relkind in ('r', 'p', 'u')
         and has_table_privilege('streamseal_control', c.oid, p.privilege) $$,
    'the control role holds no TRUNCATE, REFERENCES or TRIGGER on any table');
select is_empty(
    $$ select n.nspname from pg_namespace n
       where n.nspname in ('streamseal', 'streamseal_river') and has_schema_privilege('streamseal_control', n.oid, 'CREATE') $$,
    'the control role holds CREATE on neither schema');
select is_empty(
    $$ select c.oid::regclass::text from pg_class c
       where pg_get_userbyid(c.relowner) = 'streamseal_control'
       union all
       select p.oid::regprocedure::text from pg_proc p where pg_get_userbyid(p.proowner) = 'streamseal_control' $$,
    'the control role owns no table and no function');

select * from finish();
rollback;
