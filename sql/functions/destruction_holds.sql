-- Destruction holds on the origin: a redelivery request that names ephemeral events (a
-- consumer's confirmed gap) holds them against the reaper until the request is served or the
-- hold limit passes, so prompt detection extends repairability instead of racing the reaper.
-- The redelivery server calls hold_destruction when it accepts a request and
-- release_destruction_hold once the request's summary is out; reap_ephemeral reads the holds.

-- hold_destruction holds this origin's own stamped ephemeral events that a request names (its
-- tenants and event types, and its origin_seq window and/or type_seq ranges; the stream filter is
-- not read: holding a few more for a while is harmless) for hold_limit, and returns how many it
-- holds. A request naming neither a window nor ranges holds nothing (it names no numbers: a
-- backfill, which ephemeral types do not take). A request id already holding holds nothing more,
-- so a request redelivered by the broker cannot extend its hold. At most max_events are held.
create function streamseal.hold_destruction(
    request_id uuid, requester text, tenants text[], event_types text[],
    from_seq bigint default null, to_seq bigint default null, type_seq_ranges int8multirange default null,
    hold_limit interval default interval '24 hours', max_events integer default 10000)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
set jit = off
-- Custom plans always: the bounds must be visible so each read stays on its index range.
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    held pg_catalog.int8multirange;
    n bigint;
begin
    if hold_destruction.request_id is null then
        raise exception 'hold_destruction: request_id null is invalid: expected the request''s id'
            using errcode = '22023';
    end if;
    if hold_destruction.requester is null or hold_destruction.requester !~ '^[a-z][a-z0-9-]{0,62}$' then
        raise exception 'hold_destruction: requester % is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
            coalesce(pg_catalog.quote_literal(hold_destruction.requester), 'null')
            using errcode = '22023';
    end if;
    perform streamseal._require_redelivery_scope('hold_destruction', hold_destruction.tenants,
        hold_destruction.event_types, hold_destruction.from_seq, hold_destruction.to_seq,
        hold_destruction.type_seq_ranges);
    if hold_destruction.hold_limit is null or hold_destruction.hold_limit <= interval '0' then
        raise exception 'hold_destruction: hold_limit % is invalid: expected a positive interval',
            coalesce(hold_destruction.hold_limit::text, 'null')
            using errcode = '22023';
    end if;
    if hold_destruction.max_events is null or hold_destruction.max_events < 1 then
        raise exception 'hold_destruction: max_events % is invalid: expected a positive limit',
            coalesce(hold_destruction.max_events::text, 'null')
            using errcode = '22023';
    end if;

    if hold_destruction.from_seq is null and hold_destruction.to_seq is null
       and hold_destruction.type_seq_ranges is null then
        return 0;
    end if;
    if exists (select from streamseal.destruction_holds h where h.request_id = hold_destruction.request_id) then
        return 0;
    end if;

    if hold_destruction.type_seq_ranges is not null then
        -- One index range read of events_type_seq per (tenant, type, range): O(what is named).
        select pg_catalog.range_agg(pg_catalog.int8range(e.origin_seq, e.origin_seq + 1)), pg_catalog.count(*)
        into held, n
        from (
            select x.origin_seq
            from (select distinct t.tenant from pg_catalog.unnest(hold_destruction.tenants) t(tenant)) t
            cross join (select distinct y.event_type from pg_catalog.unnest(hold_destruction.event_types) y(event_type)) y
            cross join pg_catalog.unnest(hold_destruction.type_seq_ranges) r
            cross join lateral (
                select z.origin_seq from streamseal.event_numbers z
                where z.origin = self and z.tenant = t.tenant and z.event_type = y.event_type
                  and z.type_seq >= pg_catalog.lower(r) and z.type_seq < pg_catalog.upper(r)
                  and z.flags & 1 = 1
                  and (hold_destruction.from_seq is null or z.origin_seq >= hold_destruction.from_seq)
                  and (hold_destruction.to_seq is null or z.origin_seq < hold_destruction.to_seq)
                offset 0
            ) x
            limit hold_destruction.max_events
        ) e;
    else
        -- A window: one range read of the (origin, origin_seq) index.
        select pg_catalog.range_agg(pg_catalog.int8range(e.origin_seq, e.origin_seq + 1)), pg_catalog.count(*)
        into held, n
        from (
            select z.origin_seq from streamseal.event_numbers z
            where z.origin = self
              and z.origin_seq >= coalesce(hold_destruction.from_seq, 0)
              and (hold_destruction.to_seq is null or z.origin_seq < hold_destruction.to_seq)
              and z.flags & 1 = 1
              and z.tenant = any (hold_destruction.tenants)
              and z.event_type = any (hold_destruction.event_types)
            limit hold_destruction.max_events
        ) e;
    end if;
    if coalesce(n, 0) = 0 then
        return 0;
    end if;
    insert into streamseal.destruction_holds (request_id, requester, origin_seqs, expires_at)
    values (hold_destruction.request_id, hold_destruction.requester, held, pg_catalog.now() + hold_destruction.hold_limit)
    on conflict on constraint destruction_holds_pkey do nothing;
    if not found then
        return 0;
    end if;
    return n;
end
$$;

-- release_destruction_hold drops the hold of a served request and says whether there was one.
create function streamseal.release_destruction_hold(request_id uuid)
returns boolean
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    with released as (
        delete from streamseal.destruction_holds h where h.request_id = release_destruction_hold.request_id
        returning 1
    )
    select exists (select from released)
$$;
