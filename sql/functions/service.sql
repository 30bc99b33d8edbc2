-- The service's name for itself: set once per database (streamseal run, the demo, or an
-- application's setup), read by every function that must tell own events from copies.

-- set_service_name names this database's service. Calling it again with the same name is a no-op;
-- a different name is refused, because every copy elsewhere already refers to the first one.
create function streamseal.set_service_name(name text)
returns text
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    current_name text;
begin
    if set_service_name.name is null or set_service_name.name !~ '^[a-z][a-z0-9-]{0,62}$' then
        raise exception 'service name % is invalid: expected [a-z][a-z0-9-]{0,62}',
            coalesce(pg_catalog.quote_literal(set_service_name.name), 'null')
            using errcode = '22023';
    end if;

    insert into streamseal.service (name) values (set_service_name.name)
    on conflict (singleton) do nothing;

    select s.name into current_name from streamseal.service s;
    if current_name <> set_service_name.name then
        raise exception 'this database belongs to service "%": it cannot be renamed "%"',
            current_name, set_service_name.name
            using errcode = '55000';
    end if;
    return current_name;
end
$$;

-- service_name returns this database's service name, or fails when none was set: storing an
-- event before the database knows who it is would make own events and copies indistinguishable.
create function streamseal.service_name()
returns text
language plpgsql
stable
-- Runs as its owner: streamseal_application holds no privilege on the service table.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    current_name text;
begin
    select s.name into current_name from streamseal.service s;
    if current_name is null then
        raise exception 'this database has no service name: call streamseal.set_service_name(name) first'
            using errcode = '55000';
    end if;
    return current_name;
end
$$;

-- _require_other_origin refuses an origin that is not a valid name of another service: lanes,
-- comparisons and the ledger all hold another origin's events against this store's copies.
-- purpose ends the message when the origin is this service, saying why that cannot be.
create function streamseal._require_other_origin(caller text, origin text, purpose text)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
    if _require_other_origin.origin is null or _require_other_origin.origin !~ '^[a-z][a-z0-9-]{0,62}$' then
        raise exception '%: origin % is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
            _require_other_origin.caller, coalesce(pg_catalog.quote_literal(_require_other_origin.origin), 'null')
            using errcode = '22023';
    end if;
    if _require_other_origin.origin = streamseal.service_name() then
        raise exception '%: origin "%" is this service: %',
            _require_other_origin.caller, _require_other_origin.origin, _require_other_origin.purpose
            using errcode = '22023';
    end if;
end
$$;
