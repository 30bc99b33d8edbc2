-- privileges: the SQL surface an application may use, granted to the role streamseal_application
-- (migration 011; a DBA grants it to the application's login role). Installed last, on every
-- migrate: the install re-creates every function, and Postgres grants EXECUTE on a new function
-- to PUBLIC, so without this file everything would be callable by anyone who can connect.
--
-- The surface: append (both forms), ingest, subscribe, unsubscribe, subscribed, service_name and
-- version, plus SELECT on the tables `streamseal status` reads (known_origins, seals, lanes,
-- repair_ledger, loss_reports, consumed_types, broadcast_answers). The entry points that touch tables run as their owner (SECURITY DEFINER), so
-- the role holds no write privilege on any table: events go in only through append and ingest,
-- and digests, epochs, lanes, seals and the ledger move only through the functions that own their
-- rules. Everything else (private helpers, the stamper, checkpoints, epochs, seals, the ledger,
-- redelivery, grants) is the control plane's.
-- A new function is private until a line below grants it; tests/sqltests/privileges states the
-- list, and a change to it changes streamseal.version().
--
-- The control plane (streamseal run) connects as a login role granted streamseal_control
-- (migration 021), or as the owner. Its entry points run as the caller (SECURITY INVOKER), so the
-- helpers they call and the tables they write are its to use: it executes every function of the
-- code package and reads and writes the rows of every table, and River's job tables in
-- streamseal_river (migrate.RiverSchema, migrated before this file runs). It owns nothing: no
-- CREATE on either schema, no TRUNCATE, no DDL (only an owner alters or drops), the schema
-- version read-only; `streamseal migrate` runs as the owner. A DBA's setup is in the README.

-- GUARD: the role is cluster-wide, so a database restored into another cluster (pg_dump carries
-- no roles) reaches this install without it.
do $privileges$
declare
    missing text;
begin
    select r.name into missing
    from pg_catalog.unnest(array['streamseal_application', 'streamseal_control']) as r(name)
    where not exists (select from pg_catalog.pg_roles x where x.rolname = r.name)
    limit 1;
    if found then
        raise exception 'role % does not exist in this cluster (roles are cluster-wide: a restored database does not bring it)', missing
            using errcode = '42704',
                  hint = pg_catalog.format('a role with CREATEROLE runs: create role %s nologin; then migrate again', missing);
    end if;
end
$privileges$;

-- Nothing for anyone but the owner, then exactly the surface. Tables keep their grants across
-- installs, so what this file no longer grants is taken back here too; other roles' grants are a
-- DBA's and are left alone.
revoke all on schema streamseal from public;
revoke execute on all functions in schema streamseal from public;
revoke all on all tables in schema streamseal from public, streamseal_application, streamseal_control;
revoke all on all sequences in schema streamseal from public, streamseal_application, streamseal_control;
revoke all on all functions in schema streamseal from streamseal_control;
revoke all on schema streamseal from streamseal_control;

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
-- The application feed (feed.sql): read in commit order with a resume token, and decode a token.
grant execute on function streamseal.read_feed(text[], text[], text, integer) to streamseal_application;
grant execute on function streamseal.feed_token(text) to streamseal_application;
-- Projections and reactors (projections.sql): register and unregister SQL handlers.
grant execute on function streamseal.register_projection(text, text[], regproc, text[], regproc, boolean) to streamseal_application;
grant execute on function streamseal.register_reactor(text, text[], regproc, text[]) to streamseal_application;
grant execute on function streamseal.unregister_handler(text) to streamseal_application;
-- Projections and reactors the application runs (the Go feed package): register, advance with
-- each batch, take and replay the rebuilds the coverage audit requests (projections.sql).
grant execute on function streamseal.register_feed_projection(text, text[], text[], boolean, boolean) to streamseal_application;
grant execute on function streamseal.register_feed_reactor(text, text[], text[]) to streamseal_application;
grant execute on function streamseal.feed_handler_advance(text, text, text, uuid[], bigint[], boolean, integer) to streamseal_application;
grant execute on function streamseal.projection_rebuild_take(text) to streamseal_application;
grant execute on function streamseal.projection_rebuild_replay(text, text, text, text) to streamseal_application;

-- Status: the tables `streamseal status` reads (controlplane/status), so it runs as this role.
grant select on table streamseal.known_origins to streamseal_application;
grant select on table streamseal.seals to streamseal_application;
grant select on table streamseal.lanes to streamseal_application;
grant select on table streamseal.repair_ledger to streamseal_application;
grant select on table streamseal.loss_reports to streamseal_application;
-- The consumed-type registry and each origin's backfill progress (status: when it is complete).
grant select on table streamseal.consumed_types to streamseal_application;
grant select on table streamseal.broadcast_answers to streamseal_application;
-- Handlers, their failures and the coverage audit's findings (status: projections and reactors).
grant select on table streamseal.handlers to streamseal_application;
grant select on table streamseal.handler_failures to streamseal_application;
grant select on table streamseal.coverage_findings to streamseal_application;
-- Events projections hold out of order until the coverage audit rebuilds their streams (status).
grant select on table streamseal.projection_held to streamseal_application;

-- The control plane (streamseal_control): the whole engine, owning nothing.
grant usage on schema streamseal to streamseal_control;
grant execute on all functions in schema streamseal to streamseal_control;
grant select, insert, update, delete on all tables in schema streamseal to streamseal_control;
grant usage, select on all sequences in schema streamseal to streamseal_control;
-- The schema version is the migrator's: run only checks it (store.SchemaMigrated).
revoke insert, update, delete on table streamseal.schema_version from streamseal_control;

-- River's job tables (leader election, periodic jobs, queues), in its own schema; its migration
-- record is the migrator's. The schema exists once `streamseal migrate` has run River's
-- migrations (before this file); an install without it grants nothing there.
do $privileges$
begin
    if exists (select from pg_catalog.pg_namespace n where n.nspname = 'streamseal_river') then
        revoke all on all tables in schema streamseal_river from streamseal_control;
        revoke all on all sequences in schema streamseal_river from streamseal_control;
        revoke all on schema streamseal_river from streamseal_control;
        grant usage on schema streamseal_river to streamseal_control;
        grant select, insert, update, delete on all tables in schema streamseal_river to streamseal_control;
        grant usage, select on all sequences in schema streamseal_river to streamseal_control;
        if pg_catalog.to_regclass('streamseal_river.river_migration') is not null then
            revoke insert, update, delete on table streamseal_river.river_migration from streamseal_control;
        end if;
    end if;
end
$privileges$;
