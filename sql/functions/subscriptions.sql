-- subscriptions: on a consumer, the event types this service consumes, from one named origin or
-- from any origin ('*'). Set by the application or operator at start; read by the inbox (its
-- JetStream filter subjects) and by verification, which compares only subscribed types.

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
    return coalesce(_subscription_key.origin, '*');
end
$$;

-- subscribe records that this service consumes event_types from origin (null: from any origin)
-- and returns how many subscriptions it added: subscribing again adds nothing (idempotent).
create function streamseal.subscribe(event_types text[], origin text default null)
returns integer
language plpgsql
volatile
-- Runs as its owner: streamseal_application holds no privilege on subscriptions (privileges.sql).
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    stored_origin text := streamseal._subscription_key('subscribe', subscribe.origin, subscribe.event_types, 'a subscription');
    added integer;
begin
    insert into streamseal.subscriptions (origin, event_type)
    select distinct stored_origin, t.event_type
    from pg_catalog.unnest(subscribe.event_types) as t(event_type)
    on conflict on constraint subscriptions_pkey do nothing;
    get diagnostics added = row_count;
    return added;
end
$$;

-- unsubscribe removes the subscriptions of event_types under exactly that origin key (null: the
-- any-origin rows only; a subscription to a named origin stays until unsubscribed by name),
-- forgets the lanes no subscription covers any more, and returns how many subscriptions it
-- removed.
create function streamseal.unsubscribe(event_types text[], origin text default null)
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
    delete from streamseal.subscriptions s
    where s.origin = stored_origin
      and s.event_type = any (unsubscribe.event_types);
    get diagnostics removed = row_count;
    -- Lanes no subscription covers any more are forgotten: what the origin emits while this
    -- service does not consume is history, so subscribing again starts a new lane at the first
    -- window it sees (birth) instead of naming that history as holes.
    delete from streamseal.lanes l
    where l.event_type = any (unsubscribe.event_types)
      and not streamseal.subscribed(l.origin, l.event_type);
    return removed;
end
$$;

-- subscribed says whether this service consumes event_type from origin: a subscription to that
-- origin or to any origin ('*') exists. Null arguments answer false: an event always has both.
create function streamseal.subscribed(origin text, event_type text)
returns boolean
language sql
stable
-- Runs as its owner: streamseal_application holds no privilege on subscriptions.
security definer
set search_path = pg_catalog, pg_temp
as $$
    select subscribed.origin is not null and subscribed.event_type is not null and exists (
        select from streamseal.subscriptions s
        where s.origin in (subscribed.origin, '*') and s.event_type = subscribed.event_type)
$$;
