-- grants: on an origin, which event types each requesting service may receive in redelivery
-- (invariant 11). Operators grant and revoke; the control plane asks ungranted_types before it
-- serves a redelivery request and refuses the request when anything it names is not granted.
-- Nothing is granted by default, and there is no wildcard: a grant names its types.

-- _list_problem names what is wrong with a list a caller must spell out (event types, tenants),
-- or returns null: null, empty, multi-dimensional, holding a null, or (unless empty_name_ok)
-- holding an empty name. Shared by grants, subscriptions and redelivery (installed after this
-- file). LANGUAGE sql without a SET clause so it inlines; every name inside is qualified.
create function streamseal._list_problem(names text[], empty_name_ok boolean default false)
returns text
language sql
stable
as $$
    select case
        when _list_problem.names is null then 'expected a non-empty list, got null'
        when pg_catalog.cardinality(_list_problem.names) = 0 then 'expected a non-empty list, got {}'
        when pg_catalog.array_ndims(_list_problem.names) > 1 then
            pg_catalog.format('expected a one-dimensional list, got %s', _list_problem.names)
        when exists (select from pg_catalog.unnest(_list_problem.names) as n(name) where n.name is null) then
            pg_catalog.format('expected no null element, got %s', _list_problem.names)
        when not _list_problem.empty_name_ok and '' = any (_list_problem.names) then
            pg_catalog.format('expected no empty name, got %s', _list_problem.names)
    end
$$;

-- _require_grant_request refuses a service name that is not a service name or a type list that
-- names no types, with a message naming the caller and the bad value.
create function streamseal._require_grant_request(caller text, service text, event_types text[], what text)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    problem text;
begin
    if _require_grant_request.service is null or _require_grant_request.service !~ '^[a-z][a-z0-9-]{0,62}$' then
        raise exception '%: service % is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
            _require_grant_request.caller, coalesce(pg_catalog.quote_literal(_require_grant_request.service), 'null')
            using errcode = '22023';
    end if;
    problem := streamseal._list_problem(_require_grant_request.event_types);
    if problem is not null then
        raise exception '%: % must name its event types: %', _require_grant_request.caller, _require_grant_request.what, problem
            using errcode = '22023';
    end if;
end
$$;

-- grant_redelivery allows service to receive redelivery of event_types from this origin and
-- returns how many grants it added: granting what is already granted adds nothing (idempotent).
create function streamseal.grant_redelivery(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    added integer;
begin
    perform streamseal._require_grant_request('grant_redelivery', grant_redelivery.service,
                                              grant_redelivery.event_types, 'a grant');
    insert into streamseal.grants (service, event_type)
    select distinct grant_redelivery.service, t.event_type
    from pg_catalog.unnest(grant_redelivery.event_types) as t(event_type)
    on conflict on constraint grants_pkey do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- revoke_redelivery withdraws service's grants for event_types and returns how many it removed:
-- revoking what was never granted removes nothing. Requests already being served finish.
create function streamseal.revoke_redelivery(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    removed integer;
begin
    perform streamseal._require_grant_request('revoke_redelivery', revoke_redelivery.service,
                                              revoke_redelivery.event_types, 'a revocation');
    delete from streamseal.grants g
    where g.service = revoke_redelivery.service
      and g.event_type = any (revoke_redelivery.event_types);
    get diagnostics removed = row_count;
    return removed;
end
$$;

-- ungranted_types returns the types of event_types that service is not granted, each once, in
-- name order; an empty array means every requested type is granted and the request may be
-- served. A request must name its types: null or empty event_types is refused (22023), never
-- read as "everything", so a requester can never widen what it receives by omission.
create function streamseal.ungranted_types(service text, event_types text[])
returns text[]
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    missing text[];
begin
    perform streamseal._require_grant_request('ungranted_types', ungranted_types.service,
                                              ungranted_types.event_types, 'a redelivery request');
    select coalesce(pg_catalog.array_agg(distinct t.event_type order by t.event_type), '{}')
    into missing
    from pg_catalog.unnest(ungranted_types.event_types) as t(event_type)
    where not exists (
        select from streamseal.grants g
        where g.service = ungranted_types.service and g.event_type = t.event_type);
    return missing;
end
$$;
