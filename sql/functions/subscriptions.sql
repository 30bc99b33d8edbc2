-- subscriptions: on a consumer, the event types this service consumes, from one named origin or
-- from any origin ('*'), of named tenants or of every tenant. Set by the application or operator
-- at start; read by the inbox (one JetStream filter subject per row) and by verification, which
-- compares only subscribed (tenant, type) lanes. "Every tenant" is its own function
-- (subscribe_all_tenants), stored as an explicit flag: a tenant may be any string ('' for
-- single-tenant services, even '*'), so no tenant value, null or omission can mean "all".

-- _subscription_key validates what a caller gave, the origin and the event types (what names the
-- request in the message: 'a subscription'), and returns the origin key it is stored under: null
-- or '*' means any origin ('*'); a name must be a service name and not this service's own (a
-- service never consumes its own events as copies).
create function streamseal._subscription_key(caller text, origin text, event_types text[], what text)
returns text
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    self text;
    problem text;
    bad record;
begin
    if _subscription_key.origin is not null and _subscription_key.origin <> '*' then
        if _subscription_key.origin !~ '^[a-z][a-z0-9-]{0,62}$' then
            raise exception '%: origin % is invalid: expected a service name [a-z][a-z0-9-]{0,62}, or null for any origin',
                _subscription_key.caller, pg_catalog.quote_literal(_subscription_key.origin)
                using errcode = '22023';
        end if;
        -- Checked only once the database knows its name: subscriptions may be set up before it.
        select s.name into self from streamseal.service s;
        if _subscription_key.origin = self then
            raise exception '%: origin "%" is this service: a service does not subscribe to its own events',
                _subscription_key.caller, _subscription_key.origin
                using errcode = '22023';
        end if;
    end if;
    problem := streamseal._list_problem(_subscription_key.event_types);
    if problem is not null then
        raise exception '%: % must name its event types: %', _subscription_key.caller, _subscription_key.what, problem
            using errcode = '22023';
    end if;
    -- A type no event can have is a mistake, named now rather than consumed forever in silence.
    select t.name, pg_catalog.octet_length(t.name) as bytes, l.max_id_bytes into bad
    from pg_catalog.unnest(_subscription_key.event_types) as t(name)
    cross join streamseal.limits() l
    where pg_catalog.octet_length(t.name) > l.max_id_bytes or t.name ~ '[[:cntrl:]]'
    limit 1;
    if found and bad.bytes > bad.max_id_bytes then
        raise exception '%: event type % is % bytes: no event can have it (streamseal.limits max_id_bytes is %)',
            _subscription_key.caller, pg_catalog.quote_literal(bad.name), bad.bytes, bad.max_id_bytes
            using errcode = '22023';
    elsif found then
        raise exception '%: event type % holds a control character: expected a printable name',
            _subscription_key.caller, pg_catalog.replace(pg_catalog.quote_literal(bad.name), E'\n', '\n')
            using errcode = '22023';
    end if;
    return coalesce(_subscription_key.origin, '*');
end
$$;

-- _require_subscription_tenants refuses a tenant list that names no tenant ('' is a tenant).
create function streamseal._require_subscription_tenants(caller text, tenants text[], what text)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    problem text := streamseal._list_problem(_require_subscription_tenants.tenants, empty_name_ok => true);
begin
    if problem is not null then
        raise exception '%: % must name its tenants (every tenant: the _all_tenants form): %',
            _require_subscription_tenants.caller, _require_subscription_tenants.what, problem
            using errcode = '22023';
    end if;
end
$$;

-- subscribe records that this service consumes event_types of exactly the named tenants from
-- origin (null: from any origin) and returns how many subscriptions it added: subscribing again
-- adds nothing (idempotent).
create function streamseal.subscribe(event_types text[], origin text, tenants text[])
returns integer
language plpgsql
volatile
-- Runs as its owner: streamseal_application holds no privilege on subscriptions (privileges.sql).
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    stored_origin text := streamseal._subscription_key('subscribe', subscribe.origin, subscribe.event_types, 'a subscription');
    added integer;
begin
    perform streamseal._require_subscription_tenants('subscribe', subscribe.tenants, 'a subscription');
    insert into streamseal.subscriptions (origin, event_type, tenant, all_tenants)
    select distinct stored_origin, t.event_type, n.tenant, false
    from pg_catalog.unnest(subscribe.event_types) as t(event_type)
    cross join pg_catalog.unnest(subscribe.tenants) as n(tenant)
    on conflict (origin, event_type, tenant) where not all_tenants do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- subscribe_all_tenants records that this service consumes event_types of every tenant from
-- origin (null: any origin) and returns how many subscriptions it added (idempotent). The
-- explicit form of "every tenant".
create function streamseal.subscribe_all_tenants(event_types text[], origin text default null)
returns integer
language plpgsql
volatile
-- Runs as its owner: streamseal_application holds no privilege on subscriptions (privileges.sql).
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    stored_origin text := streamseal._subscription_key('subscribe_all_tenants', subscribe_all_tenants.origin,
                                                       subscribe_all_tenants.event_types, 'a subscription');
    added integer;
begin
    insert into streamseal.subscriptions (origin, event_type, tenant, all_tenants)
    select distinct stored_origin, t.event_type, null::text, true
    from pg_catalog.unnest(subscribe_all_tenants.event_types) as t(event_type)
    on conflict (origin, event_type) where all_tenants do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- subscribe(event_types, origin), the form without tenants, was removed when subscriptions
-- gained tenants: omitting the tenants must not mean "every tenant". It stays as a clear refusal.
create function streamseal.subscribe(event_types text[], origin text default null)
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'subscribe(event_types, origin) was removed: name the tenants with subscribe(event_types, origin, tenants), or subscribe to every tenant explicitly with subscribe_all_tenants(event_types, origin)'
        using errcode = '42883';
end
$$;

-- _forget_unsubscribed_lanes forgets the lanes of event_types no subscription covers any more:
-- what the origin emits while this service does not consume is history, so subscribing again
-- starts a new lane at the first window it sees (birth) instead of naming that history as holes.
create function streamseal._forget_unsubscribed_lanes(event_types text[])
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    delete from streamseal.lanes l
    where l.event_type = any (_forget_unsubscribed_lanes.event_types)
      and not streamseal.subscribed(l.origin, l.tenant, l.event_type);
end
$$;

-- unsubscribe removes the one-tenant subscriptions of event_types for the named tenants under
-- exactly that origin key (null: the any-origin rows only; a subscription to a named origin
-- stays until unsubscribed by name), forgets the lanes no subscription covers any more, and
-- returns how many subscriptions it removed. An every-tenant subscription is removed only by
-- unsubscribe_all_tenants.
create function streamseal.unsubscribe(event_types text[], origin text, tenants text[])
returns integer
language plpgsql
volatile
-- Runs as its owner: streamseal_application holds no privilege on subscriptions or lanes.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    stored_origin text := streamseal._subscription_key('unsubscribe', unsubscribe.origin, unsubscribe.event_types,
                                                       'an unsubscription');
    removed integer;
begin
    perform streamseal._require_subscription_tenants('unsubscribe', unsubscribe.tenants, 'an unsubscription');
    delete from streamseal.subscriptions s
    where s.origin = stored_origin
      and not s.all_tenants
      and s.event_type = any (unsubscribe.event_types)
      and s.tenant = any (unsubscribe.tenants);
    get diagnostics removed = row_count;
    perform streamseal._forget_unsubscribed_lanes(unsubscribe.event_types);
    return removed;
end
$$;

-- unsubscribe_all_tenants removes the every-tenant subscriptions of event_types under exactly
-- that origin key (null: the any-origin rows only), forgets the lanes no subscription covers any
-- more, and returns how many subscriptions it removed; one-tenant subscriptions stay.
create function streamseal.unsubscribe_all_tenants(event_types text[], origin text default null)
returns integer
language plpgsql
volatile
-- Runs as its owner: streamseal_application holds no privilege on subscriptions or lanes.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    stored_origin text := streamseal._subscription_key('unsubscribe_all_tenants', unsubscribe_all_tenants.origin,
                                                       unsubscribe_all_tenants.event_types, 'an unsubscription');
    removed integer;
begin
    delete from streamseal.subscriptions s
    where s.origin = stored_origin
      and s.all_tenants
      and s.event_type = any (unsubscribe_all_tenants.event_types);
    get diagnostics removed = row_count;
    perform streamseal._forget_unsubscribed_lanes(unsubscribe_all_tenants.event_types);
    return removed;
end
$$;

-- unsubscribe(event_types, origin): removed with the tenant-less subscribe (see above).
create function streamseal.unsubscribe(event_types text[], origin text default null)
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'unsubscribe(event_types, origin) was removed: name the tenants with unsubscribe(event_types, origin, tenants), or remove an every-tenant subscription with unsubscribe_all_tenants(event_types, origin)'
        using errcode = '42883';
end
$$;

-- subscribed says whether this service consumes event_type of tenant from origin: a
-- subscription to that origin or to any origin ('*'), for that tenant or for every tenant.
-- Null arguments answer false: an event always has all three.
create function streamseal.subscribed(origin text, tenant text, event_type text)
returns boolean
language sql
stable
-- Runs as its owner: streamseal_application holds no privilege on subscriptions.
security definer
set search_path = pg_catalog, pg_temp
as $$
    select subscribed.origin is not null and subscribed.tenant is not null and subscribed.event_type is not null and exists (
        select from streamseal.subscriptions s
        where s.origin in (subscribed.origin, '*') and s.event_type = subscribed.event_type
          and (s.all_tenants or s.tenant = subscribed.tenant))
$$;
