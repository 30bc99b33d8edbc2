-- streamseal_application: the role an application's login role is granted (by a DBA: `grant
-- streamseal_application to orders_app`) to use streamseal from the application side: append,
-- ingest, subscribe and read integrity status, and nothing the control plane decides. What it may
-- do is granted by the code package (sql/functions/privileges.sql, re-applied on every migrate,
-- because every install re-creates the functions); this migration only makes sure it exists.
--
-- Why a migration creates it rather than merely requiring it: the code package grants to it on
-- every install, so a fresh database must find it without a manual step, and the role is the
-- same in every database of a cluster. It is NOLOGIN (a group role: applications log in as their
-- own roles). A DBA may create it beforehand, which is required when the migrating role may not
-- create roles: then this is a no-op, and otherwise the error says what to run.
--
-- Roles are cluster-wide and several databases of one cluster may be migrated at once (test
-- templates, one database per service on a shared server): the existence check and the create
-- race, so the loser's duplicate is caught (duplicate_object when the winner had committed before
-- the check, unique_violation on pg_authid's name index when it committed while we waited on it).
do $role$
begin
    if not exists (select from pg_catalog.pg_roles r where r.rolname = 'streamseal_application') then
        create role streamseal_application nologin;
        comment on role streamseal_application is
            'streamseal''s application surface: grant it to an application''s login role (see the README)';
    end if;
exception
    when duplicate_object or unique_violation then
        null; -- another database of this cluster created it first: it exists, which is all we need
    when insufficient_privilege then
        raise exception 'role streamseal_application does not exist and role "%" may not create roles', current_user
            using errcode = '42501',
                  hint = 'a role with CREATEROLE runs once per cluster: create role streamseal_application nologin;'
                      ' then migrate again';
end
$role$;

---- create above / drop below ----

-- The role is cluster-wide and other databases of the cluster may still use it: rolling this
-- database back takes back what this database granted it and leaves the role itself alone.
do $role$
begin
    if exists (select from pg_catalog.pg_roles r where r.rolname = 'streamseal_application') then
        revoke all on all functions in schema streamseal from streamseal_application;
        revoke all on all tables in schema streamseal from streamseal_application;
        revoke all on schema streamseal from streamseal_application;
    end if;
end
$role$;
