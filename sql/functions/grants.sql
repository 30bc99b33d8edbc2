-- grants: on an origin, which (tenant, event type) pairs each requesting service may receive in
-- redelivery and manifest answers (invariant 11). Operators grant and revoke; the control plane
-- asks ungranted_types before it serves a redelivery request and refuses the request when any
-- pair it names is not granted; selection and answers filter by _granted as well. Nothing is
-- granted by default. A grant names its types and its tenants; "every tenant" is its own
-- function (grant_redelivery_all_tenants) stored as an explicit flag, never a tenant value: a
-- tenant may be any string ('' for single-tenant services, even '*'), so no value can mean "all".

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

-- _require_grant_request refuses a service name that is not a service name, a type list that
-- names no types, or (when tenants is given, i.e. not the all-tenants form) a tenant list that
-- names no tenants, with a message naming the caller and the bad value. '' is a tenant (the
-- single-tenant service's); null and {} are refused, never read as "every tenant".
create function streamseal._require_grant_request(caller text, service text, event_types text[], what text,
                                                  tenants text[] default null, tenants_required boolean default false)
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
    if _require_grant_request.tenants_required then
        problem := streamseal._list_problem(_require_grant_request.tenants, empty_name_ok => true);
        if problem is not null then
            raise exception '%: % must name its tenants (every tenant: the _all_tenants form): %',
                _require_grant_request.caller, _require_grant_request.what, problem
                using errcode = '22023';
        end if;
    end if;
end
$$;

-- grant_redelivery allows service to receive redelivery and manifest answers of event_types of
-- exactly the named tenants from this origin, and returns how many grants it added: granting
-- what is already granted adds nothing (idempotent). An all-tenant grant of a type already
-- covers every tenant; a one-tenant grant beside it is recorded and stays when the all-tenant
-- grant is revoked.
create function streamseal.grant_redelivery(service text, event_types text[], tenants text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
-- The conflict target names the table's columns, which share the parameters' names.
#variable_conflict use_column
declare
    added integer;
begin
    perform streamseal._require_grant_request('grant_redelivery', grant_redelivery.service,
                                              grant_redelivery.event_types, 'a grant', grant_redelivery.tenants, true);
    insert into streamseal.grants (service, event_type, tenant, all_tenants)
    select distinct grant_redelivery.service, t.event_type, n.tenant, false
    from pg_catalog.unnest(grant_redelivery.event_types) as t(event_type)
    cross join pg_catalog.unnest(grant_redelivery.tenants) as n(tenant)
    on conflict (service, event_type, tenant) where not all_tenants do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- grant_redelivery_all_tenants allows service to receive event_types of every tenant, present
-- and future, and returns how many grants it added (idempotent). The explicit form of "every
-- tenant": it is never implied by omitting or nulling the tenants of grant_redelivery.
create function streamseal.grant_redelivery_all_tenants(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
-- The conflict target names the table's columns, which share the parameters' names.
#variable_conflict use_column
declare
    added integer;
begin
    perform streamseal._require_grant_request('grant_redelivery_all_tenants', grant_redelivery_all_tenants.service,
                                              grant_redelivery_all_tenants.event_types, 'a grant');
    insert into streamseal.grants (service, event_type, tenant, all_tenants)
    select distinct grant_redelivery_all_tenants.service, t.event_type, null::text, true
    from pg_catalog.unnest(grant_redelivery_all_tenants.event_types) as t(event_type)
    on conflict (service, event_type) where all_tenants do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- grant_redelivery(service, event_types), the type-only form, was removed when grants gained
-- tenants: omitting the tenants must not mean "every tenant". It stays as a clear refusal so an
-- old script learns what to call instead of reading "function does not exist".
create function streamseal.grant_redelivery(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'grant_redelivery(service, event_types) was removed: name the tenants with grant_redelivery(service, event_types, tenants), or grant every tenant explicitly with grant_redelivery_all_tenants(service, event_types)'
        using errcode = '42883';
end
$$;

-- revoke_redelivery withdraws service's one-tenant grants of event_types for the named tenants
-- and returns how many it removed: revoking what was never granted removes nothing. An
-- all-tenant grant is withdrawn only by revoke_redelivery_all_tenants (a tenant cannot be carved
-- out of "every tenant"; revoke that and grant the tenants wanted). Requests already being
-- served finish.
create function streamseal.revoke_redelivery(service text, event_types text[], tenants text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    removed integer;
begin
    perform streamseal._require_grant_request('revoke_redelivery', revoke_redelivery.service,
                                              revoke_redelivery.event_types, 'a revocation', revoke_redelivery.tenants, true);
    delete from streamseal.grants g
    where g.service = revoke_redelivery.service
      and not g.all_tenants
      and g.event_type = any (revoke_redelivery.event_types)
      and g.tenant = any (revoke_redelivery.tenants);
    get diagnostics removed = row_count;
    return removed;
end
$$;

-- revoke_redelivery_all_tenants withdraws service's all-tenant grants of event_types and returns
-- how many it removed; one-tenant grants stay.
create function streamseal.revoke_redelivery_all_tenants(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    removed integer;
begin
    perform streamseal._require_grant_request('revoke_redelivery_all_tenants', revoke_redelivery_all_tenants.service,
                                              revoke_redelivery_all_tenants.event_types, 'a revocation');
    delete from streamseal.grants g
    where g.service = revoke_redelivery_all_tenants.service
      and g.all_tenants
      and g.event_type = any (revoke_redelivery_all_tenants.event_types);
    get diagnostics removed = row_count;
    return removed;
end
$$;

-- revoke_redelivery(service, event_types): removed with the type-only grant (see above).
create function streamseal.revoke_redelivery(service text, event_types text[])
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'revoke_redelivery(service, event_types) was removed: name the tenants with revoke_redelivery(service, event_types, tenants), or withdraw an every-tenant grant with revoke_redelivery_all_tenants(service, event_types)'
        using errcode = '42883';
end
$$;

-- _granted says whether service may receive (tenant, event_type): a one-tenant grant of the pair
-- or an all-tenant grant of the type. Null arguments answer false. LANGUAGE sql without a SET
-- clause so it inlines into the selections and answers that filter row by row.
create function streamseal._granted(service text, tenant text, event_type text)
returns boolean
language sql
stable
as $$
    select exists (
        select from streamseal.grants g
        where g.service = _granted.service and g.event_type = _granted.event_type
          and (g.all_tenants or g.tenant = _granted.tenant))
$$;

-- _granted_tenants returns the tenants of this origin's own lane that service may receive for
-- any of event_types: the one-tenant grants named, and for a type granted for every tenant,
-- every tenant this origin ever numbered an event of that type for (type_seq_counters). It
-- resolves a request that names no tenant to what its requester is granted; the pairs are still
-- filtered by _granted (a tenant granted for one type is not thereby granted for another).
create function streamseal._granted_tenants(service text, event_types text[])
returns text[]
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(pg_catalog.array_agg(distinct x.tenant order by x.tenant), '{}')
    from (
        select g.tenant
        from streamseal.grants g
        where g.service = _granted_tenants.service and not g.all_tenants
          and g.event_type = any (_granted_tenants.event_types)
        union all
        select c.tenant
        from streamseal.grants g
        join streamseal.type_seq_counters c on c.event_type = g.event_type
        where g.service = _granted_tenants.service and g.all_tenants
          and g.event_type = any (_granted_tenants.event_types)
    ) x
$$;

-- ungranted_types returns the (tenant, event_type) pairs of tenants x event_types that service
-- is not granted, each once, in (tenant, event_type) order; no row means every requested pair is
-- granted and the request may be served. A request must name its tenants and types: null or
-- empty lists are refused (22023), never read as "everything", so a requester can never widen
-- what it receives by omission.
create function streamseal.ungranted_types(service text, event_types text[], tenants text[])
returns table (tenant text, event_type text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
    perform streamseal._require_grant_request('ungranted_types', ungranted_types.service,
                                              ungranted_types.event_types, 'a redelivery request',
                                              ungranted_types.tenants, true);
    return query
    select distinct n.tenant, t.event_type
    from pg_catalog.unnest(ungranted_types.tenants) as n(tenant)
    cross join pg_catalog.unnest(ungranted_types.event_types) as t(event_type)
    where not streamseal._granted(ungranted_types.service, n.tenant, t.event_type)
    order by 1, 2;
end
$$;
