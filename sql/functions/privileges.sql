-- privileges: the SQL surface an application may use, granted to the role streamseal_application
-- (migration 011; a DBA grants it to the application's login role). Installed last, on every
-- migrate: the install re-creates every function, and Postgres grants EXECUTE on a new function
-- to PUBLIC, so without this file everything would be callable by anyone who can connect.
--
-- The surface: append (both forms), ingest, subscribe, unsubscribe, subscribed, service_name and
-- version, plus SELECT on the tables `streamseal status` reads (known_origins, seals, lanes,
-- repair_ledger). The entry points that touch tables run as their owner (SECURITY DEFINER), so
-- the role holds no write privilege on any table: events go in only through append and ingest,
-- and digests, epochs, lanes, seals and the ledger move only through the functions that own their
-- rules. Everything else (private helpers, the stamper, checkpoints, epochs, seals, the ledger,
-- redelivery, grants) stays the owner's: the control plane connects as the role that migrated.
-- A new function is private until a line below grants it; tests/sqltests/privileges states the
-- list, and a change to it changes streamseal.version().

-- GUARD: the role is cluster-wide, so a database restored into another cluster (pg_dump carries
-- no roles) reaches this install without it.
do $privileges$
begin
    if not exists (select from pg_catalog.pg_roles r where r.rolname = 'streamseal_application') then
        raise exception 'role streamseal_application does not exist in this cluster (roles are cluster-wide: a restored database does not bring it)'
            using errcode = '42704',
                  hint = 'a role with CREATEROLE runs: create role streamseal_application nologin; then migrate again';
    end if;
end
$privileges$;

-- Nothing for anyone but the owner, then exactly the surface. Tables keep their grants across
-- installs, so what this file no longer grants is taken back here too; other roles' grants are a
-- DBA's and are left alone.
revoke all on schema streamseal from public;
revoke execute on all functions in schema streamseal from public;
revoke all on all tables in schema streamseal from public, streamseal_application;
revoke all on all sequences in schema streamseal from public, streamseal_application;

grant usage on schema streamseal to streamseal_application;

-- Writing (append.sql, ingest.sql, subscriptions.sql).
grant execute on function streamseal.append(streamseal.new_event[]) to streamseal_application;
grant execute on function streamseal.append(text, text, bigint, text, bytea, jsonb, integer, uuid) to streamseal_application;
grant execute on function streamseal.ingest(streamseal.event_copy[]) to streamseal_application;
grant execute on function streamseal.subscribe(text[], text, text[]) to streamseal_application;
grant execute on function streamseal.subscribe_all_tenants(text[], text) to streamseal_application;
grant execute on function streamseal.unsubscribe(text[], text, text[]) to streamseal_application;
grant execute on function streamseal.unsubscribe_all_tenants(text[], text) to streamseal_application;
-- The removed tenant-less forms, so an application calling them reads what to call instead.
grant execute on function streamseal.subscribe(text[], text) to streamseal_application;
grant execute on function streamseal.unsubscribe(text[], text) to streamseal_application;

-- Reading (subscriptions.sql, service.sql, version.sql).
grant execute on function streamseal.subscribed(text, text, text) to streamseal_application;
grant execute on function streamseal.service_name() to streamseal_application;
grant execute on function streamseal.version() to streamseal_application;

-- Status: the tables `streamseal status` reads (controlplane/status), so it runs as this role.
grant select on table streamseal.known_origins to streamseal_application;
grant select on table streamseal.seals to streamseal_application;
grant select on table streamseal.lanes to streamseal_application;
grant select on table streamseal.repair_ledger to streamseal_application;
