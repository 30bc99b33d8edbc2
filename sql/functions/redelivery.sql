-- Redelivery on the origin: the selection the redelivery pump ships to a requester (repair,
-- backfill, an operator's manual repair), and the account of what a request asked for that
-- cannot be served, so the requester records it instead of asking forever. Own lane only:
-- copies received from other origins are never re-shipped under this service's identity.
-- The pump checks ungranted_types (grants.sql) before it calls either, and passes the requester,
-- whose grants filter every row again (invariant 11).

-- _require_redelivery_scope refuses a request that does not name its tenants and event types,
-- or whose origin_seq window or type_seq ranges cannot be read, with a message naming caller.
create function streamseal._require_redelivery_scope(
    caller text, tenants text[], event_types text[], from_seq bigint, to_seq bigint,
    type_seq_ranges int8multirange)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    problem text;
begin
    -- A request names its tenants ('' is the single-tenant service's tenant) and its types:
    -- an omitted list is never read as "everything" (invariant 11).
    problem := streamseal._list_problem(_require_redelivery_scope.tenants, empty_name_ok => true);
    if problem is not null then
        raise exception '%: a redelivery request must name its tenants: %', _require_redelivery_scope.caller, problem
            using errcode = '22023';
    end if;
    problem := streamseal._list_problem(_require_redelivery_scope.event_types);
    if problem is not null then
        raise exception '%: a redelivery request must name its event types: %', _require_redelivery_scope.caller, problem
            using errcode = '22023';
    end if;
    if _require_redelivery_scope.from_seq < 0 or _require_redelivery_scope.to_seq < 0
       or _require_redelivery_scope.to_seq < _require_redelivery_scope.from_seq then
        raise exception '%: origin_seq window [%, %) is invalid: expected 0 <= from <= to (null: unbounded)',
            _require_redelivery_scope.caller, coalesce(_require_redelivery_scope.from_seq::text, 'null'),
            coalesce(_require_redelivery_scope.to_seq::text, 'null')
            using errcode = '22023';
    end if;
    if pg_catalog.isempty(_require_redelivery_scope.type_seq_ranges) then
        raise exception '%: type_seq_ranges {} is invalid: expected null (every type_seq) or at least one range',
            _require_redelivery_scope.caller
            using errcode = '22023';
    end if;
end
$$;

-- _stream_walk returns the next n numbered events of lane in (stream_id, stream_version) order
-- after the cursor (from the start when after_stream is null), always by walking the
-- (origin, stream_id, stream_version) index: sorts and bitmap scans are switched off here, so a
-- table whose statistics predate a bulk load cannot turn the walk into a read of the whole lane.
-- The own lane's numbers are in own_numbers (issue 16); a copied lane's (a service answering a
-- backfill with forwarded copies, backfill_answers.sql) in events. The own lane walks events
-- and probes own_numbers by local_id once per row, in a fenced lateral subquery (offset 0): an
-- unnumbered own event has no row there and is skipped. (Through the own_events view, a table
-- never analyzed after a bulk load got a nested loop that materialized the whole own_numbers
-- scan and rescanned it per page row: 795 ms a 500-row page at 20 000 events instead of ~3 ms.)
create function streamseal._stream_walk(lane text, after_stream text, after_version bigint, n integer)
returns setof streamseal.numbered_events
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set enable_sort = off
set enable_bitmapscan = off
set enable_seqscan = off
set plan_cache_mode = force_custom_plan
as $$
begin
    if _stream_walk.lane = streamseal.service_name() and _stream_walk.after_stream is null then
        return query
        select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id,
               e.stream_version, n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
        from streamseal.events e
        cross join lateral (
            select x.origin, x.origin_seq, x.type_seq, x.tenant, x.event_type
            from streamseal.own_numbers x where x.local_id = e.local_id
            offset 0
        ) n
        where e.origin = _stream_walk.lane
        order by e.origin, e.stream_id, e.stream_version
        limit _stream_walk.n;
    elsif _stream_walk.lane = streamseal.service_name() then
        return query
        select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id,
               e.stream_version, n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
        from streamseal.events e
        cross join lateral (
            select x.origin, x.origin_seq, x.type_seq, x.tenant, x.event_type
            from streamseal.own_numbers x where x.local_id = e.local_id
            offset 0
        ) n
        where e.origin = _stream_walk.lane
          and (e.stream_id, e.stream_version) > (_stream_walk.after_stream, _stream_walk.after_version)
        order by e.origin, e.stream_id, e.stream_version
        limit _stream_walk.n;
    elsif _stream_walk.after_stream is null then
        return query
        select e.event_id, e.local_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id,
               e.stream_version, e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
        from streamseal.events e
        where e.origin = _stream_walk.lane and e.origin_seq is not null
        order by e.origin, e.stream_id, e.stream_version
        limit _stream_walk.n;
    else
        return query
        select e.event_id, e.local_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id,
               e.stream_version, e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
        from streamseal.events e
        where e.origin = _stream_walk.lane and e.origin_seq is not null
          and (e.stream_id, e.stream_version) > (_stream_walk.after_stream, _stream_walk.after_version)
        order by e.origin, e.stream_id, e.stream_version
        limit _stream_walk.n;
    end if;
end
$$;

-- select_redelivery returns one page of this origin's own stamped events matching every given
-- filter (conjunctive): tenants and event_types (required), streams, the origin_seq window
-- [from_seq, to_seq) and type_seq_ranges (each optional: null means unfiltered). Pages are in
-- (stream_id, stream_version) order, so a stream's slice arrives init-first and append-only, and
-- continue strictly after the keyset (after_stream, after_version) of the previous page's last
-- row (both null: from the start). A page holds at most least(max_events, cap) rows: cap is the
-- origin's own limit, which a requester's max_events can never raise. A page shorter than that
-- limit is the last.
--
-- Never selected: copies received from other origins, unstamped own events (not yet numbered,
-- so a requester could not place them; the relay ships them once stamped), and at-most-once
-- occurrences (re-delivering one would break the guarantee it was declared with). Ephemeral
-- events are selected while their bodies are present; reaped ones are simply gone (see
-- redelivery_unservable). Payloads are returned as stored, never re-serialized (invariant 3).
--
-- state_only (a backfill's selection) leaves ephemeral events out: history is never backfilled
-- with short-lived events. A state-only selection includes the at-most-once occurrences (not
-- ephemeral) of at_most_once_types, a backfill's per-type opt-in: delivered state-only they fire
-- no side effect, and the requester never had them.
-- requester, when given, is the service the page is for: only the (tenant, type) pairs it is
-- granted are returned (grants.sql), and a null tenants list then means its granted tenants of
-- event_types (never every tenant). Without a requester (an operator's local call) tenants are
-- required.
create function streamseal.select_redelivery(
    tenants text[],
    event_types text[],
    streams text[] default null,
    from_seq bigint default null,
    to_seq bigint default null,
    type_seq_ranges int8multirange default null,
    after_stream text default null,
    after_version bigint default null,
    max_events integer default 500,
    cap integer default 10000,
    requester text default null,
    state_only boolean default false,
    at_most_once_types text[] default null)
returns table (event_id uuid, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
               stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
               occurred_at timestamptz)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: the optional filters fold away only when the planner sees the actual
-- values, so each call gets the plan its filters deserve (the keyset walk of the
-- (origin, stream_id, stream_version) index for a page, a window scan for a narrow window).
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    -- A backfill's per-type opt-in: these types' at-most-once occurrences (not ephemeral) are
    -- selected too. Null (never in a plain repair): none are.
    amo_types text[] := case when select_redelivery.state_only then select_redelivery.at_most_once_types end;
    problem text;
    page integer;
    window_size bigint;
    requested numeric;
    all_granted boolean := false;
begin
    -- GUARD: a requester receives only the (tenant, type) pairs it is granted (invariant 11). A
    -- request of a requester that names no tenant asks for its granted tenants, never for every
    -- tenant; the pairs are filtered row by row below as well.
    if select_redelivery.requester is not null and select_redelivery.tenants is null
       and streamseal._list_problem(select_redelivery.event_types) is null then
        select_redelivery.tenants := streamseal._granted_tenants(select_redelivery.requester, select_redelivery.event_types);
        if pg_catalog.cardinality(select_redelivery.tenants) = 0 then
            return;
        end if;
    end if;
    perform streamseal._require_redelivery_scope('select_redelivery', select_redelivery.tenants,
        select_redelivery.event_types, select_redelivery.from_seq, select_redelivery.to_seq,
        select_redelivery.type_seq_ranges);
    if select_redelivery.streams is not null then
        problem := streamseal._list_problem(select_redelivery.streams);
        if problem is not null then
            raise exception 'select_redelivery: a stream filter must name its streams (null: every stream): %', problem
                using errcode = '22023';
        end if;
    end if;
    if (select_redelivery.after_stream is null) <> (select_redelivery.after_version is null) then
        raise exception 'select_redelivery: keyset cursor (%, %) is half given: expected after_stream and after_version both or neither',
            coalesce(pg_catalog.quote_literal(select_redelivery.after_stream), 'null'),
            coalesce(select_redelivery.after_version::text, 'null')
            using errcode = '22023';
    end if;
    if select_redelivery.max_events is null or select_redelivery.max_events < 1 then
        raise exception 'select_redelivery: max_events % is invalid: expected a positive page size',
            coalesce(select_redelivery.max_events::text, 'null')
            using errcode = '22023';
    end if;
    if select_redelivery.cap is null or select_redelivery.cap < 1 then
        raise exception 'select_redelivery: cap % is invalid: expected a positive limit',
            coalesce(select_redelivery.cap::text, 'null')
            using errcode = '22023';
    end if;

    page := least(select_redelivery.max_events, select_redelivery.cap);
    -- How many origin_seqs the request can touch at most (the window clipped to what is stamped).
    select least(coalesce(select_redelivery.to_seq, st.last_origin_seq + 1), st.last_origin_seq + 1)
           - greatest(coalesce(select_redelivery.from_seq, 1), 1)
    into window_size
    from streamseal.stamp_state st;

    -- GUARD: a few requested type_seqs (a checkpoint repair names its lane's holes, no window)
    -- are read range by range through the (origin, tenant, event_type, type_seq) index and
    -- sorted: O(the requested type_seqs) a page, not a walk of the lane in stream order (that
    -- was ~450 ms a page at 1M events whatever was asked). Many type_seqs (a backfill-sized
    -- range) take the walk below, which reads each row of the lane once per request.
    if select_redelivery.type_seq_ranges is not null then
        select pg_catalog.sum(case when pg_catalog.lower_inf(r) or pg_catalog.upper_inf(r) then 1e19
                                   else (pg_catalog.upper(r) - pg_catalog.lower(r))::numeric end)
               * pg_catalog.cardinality(select_redelivery.tenants) * pg_catalog.cardinality(select_redelivery.event_types)
        into requested
        from pg_catalog.unnest(select_redelivery.type_seq_ranges) r;
    end if;
    if coalesce(requested, 0) between 1 and 8 * page then
        return query
        select e.event_id, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
               e.flags, e.payload, e.metadata, e.occurred_at
        from (select distinct t.tenant from pg_catalog.unnest(select_redelivery.tenants) t(tenant)) t
        cross join (select distinct y.event_type from pg_catalog.unnest(select_redelivery.event_types) y(event_type)) y
        cross join pg_catalog.unnest(select_redelivery.type_seq_ranges) r
        cross join lateral (
            -- own_numbers by its (origin, tenant, event_type, type_seq) key, then each row's
            -- event by event_id (a fenced probe): never a join the planner may reorder.
            select ev.event_id, x.origin_seq, x.type_seq, x.tenant, ev.stream_id, ev.stream_version, x.event_type,
                   ev.flags, ev.payload, ev.metadata, ev.occurred_at
            from streamseal.own_numbers x
            cross join lateral (
                select v.event_id, v.stream_id, v.stream_version, v.flags, v.payload, v.metadata, v.occurred_at
                from streamseal.events v where v.event_id = x.event_id
                offset 0
            ) ev
            where x.origin = self
              and x.tenant = t.tenant
              and x.event_type = y.event_type
              and (select_redelivery.requester is null or streamseal._granted(select_redelivery.requester, x.tenant, x.event_type))
              and x.type_seq >= pg_catalog.lower(r) and x.type_seq < pg_catalog.upper(r)
              and (x.flags in (0, 1, 4, 5) or (x.flags in (2, 6) and x.event_type = any (amo_types))) -- at-most-once: only opted in (see above)
              and not (select_redelivery.state_only and x.flags in (1, 5)) -- a backfill ships no ephemeral event
              and (select_redelivery.streams is null or x.stream_id = any (select_redelivery.streams))
              and (select_redelivery.from_seq is null or x.origin_seq >= select_redelivery.from_seq)
              and (select_redelivery.to_seq is null or x.origin_seq < select_redelivery.to_seq)
              and (select_redelivery.after_stream is null
                   or (ev.stream_id, ev.stream_version) > (select_redelivery.after_stream, select_redelivery.after_version))
            -- In the (origin, tenant, event_type, type_seq) key's order: when the statistics
            -- estimate one row for every index (analyzed while the tables held only dead rows),
            -- the primary key with origin alone tied with it and read the whole lane; the key's
            -- order breaks the tie (the primary key would need a sort).
            order by x.origin, x.tenant, x.event_type, x.type_seq
            -- A fence: the subquery stays one index range scan per requested range.
            offset 0
        ) e
        order by e.stream_id, e.stream_version
        limit page;
        return;
    end if;

    -- GUARD: a narrow window is read through the index that bounds it and sorted: O(window) a page.
    if window_size <= 8 * page then
        return query
    select ev.event_id, e.origin_seq, e.type_seq, e.tenant, e.stream_id, ev.stream_version, e.event_type,
           e.flags, ev.payload, ev.metadata, ev.occurred_at
    -- own_numbers by its (origin, origin_seq) key over the window, then each row's event by
    -- event_id (a fenced probe): O(window) rows of each, whatever the statistics say.
    from (
        select e.event_id, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.event_type, e.flags
        from streamseal.own_numbers e
        where e.origin = self
          -- Not an at-most-once occurrence (bit 2). Spelled as the flag values it allows (flags
          -- holds bits 1, 2 and 4 only) so the planner estimates it from column statistics:
          -- flags & 2 = 0 is guessed at 0.5% of rows, which turned a 500-row keyset page at 50k
          -- rows into a full scan and sort instead of an index walk that stops at the page.
          and (e.flags in (0, 1, 4, 5) or (e.flags in (2, 6) and e.event_type = any (amo_types)))
          and not (select_redelivery.state_only and e.flags in (1, 5)) -- a backfill ships no ephemeral event
          and e.tenant = any (select_redelivery.tenants)
          and e.event_type = any (select_redelivery.event_types)
          and (select_redelivery.requester is null or streamseal._granted(select_redelivery.requester, e.tenant, e.event_type))
          and (select_redelivery.streams is null or e.stream_id = any (select_redelivery.streams))
          and (select_redelivery.from_seq is null or e.origin_seq >= select_redelivery.from_seq)
          and (select_redelivery.to_seq is null or e.origin_seq < select_redelivery.to_seq)
          and (select_redelivery.type_seq_ranges is null or select_redelivery.type_seq_ranges @> e.type_seq)
        -- In the (origin, origin_seq) key's order: when the statistics estimate one row for every
        -- index (analyzed while the tables held only dead rows), the (origin, tenant, event_type,
        -- type_seq) key with origin alone tied with it and read the whole lane; the order breaks
        -- the tie (that key would need a sort). A fence keeps it one range scan.
        order by e.origin, e.origin_seq
        offset 0
    ) e
    cross join lateral (
        select v.event_id, v.stream_version, v.payload, v.metadata, v.occurred_at
        from streamseal.events v where v.event_id = e.event_id
        offset 0
    ) ev
    -- A row comparison, so the page starts at the cursor.
    where select_redelivery.after_stream is null
       or (e.stream_id, ev.stream_version) > (select_redelivery.after_stream, select_redelivery.after_version)
    order by e.stream_id, ev.stream_version
    limit least(select_redelivery.max_events, select_redelivery.cap);
        return;
    end if;

    -- GUARD: a named set of streams (the audit's repairs) over a wide window is read stream by
    -- stream through the (origin, stream_id, stream_version) index from the cursor, at most a
    -- page of each, then merged: O(the named streams) a page, whatever the statistics say. (In
    -- one query with the window, a table not analyzed since a bulk load got a read of the whole
    -- window through the origin_seq index: 200-270 ms for a 100-event page at 1M events.)
    if select_redelivery.streams is not null then
        return query
        select e.event_id, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
               e.flags, e.payload, e.metadata, e.occurred_at
        -- Streams in order, each walked in version order: an incremental sort merges them and
        -- the limit stops the walk once a page is full.
        from (select distinct s.stream_id from pg_catalog.unnest(select_redelivery.streams) as s(stream_id)
              order by s.stream_id) s
        cross join lateral (
            -- events by (origin, stream_id, stream_version), then each row's numbers by
            -- event_id (a fenced probe): never a join the planner may reorder.
            select x.event_id, n.origin_seq, n.type_seq, n.tenant, x.stream_id, x.stream_version, n.event_type,
                   x.flags, x.payload, x.metadata, x.occurred_at
            from streamseal.events x
            cross join lateral (
                select w.origin_seq, w.type_seq, w.tenant, w.event_type
                from streamseal.own_numbers w where w.local_id = x.local_id
                offset 0
            ) n
            where x.origin = self
              and x.stream_id = s.stream_id
              and (select_redelivery.after_stream is null
                   or (x.stream_id, x.stream_version) > (select_redelivery.after_stream, select_redelivery.after_version))
              and (x.flags in (0, 1, 4, 5) or (x.flags in (2, 6) and n.event_type = any (amo_types))) -- at-most-once: only opted in (see above)
              and not (select_redelivery.state_only and x.flags in (1, 5)) -- a backfill ships no ephemeral event
              and n.tenant = any (select_redelivery.tenants)
              and n.event_type = any (select_redelivery.event_types)
              and (select_redelivery.requester is null or streamseal._granted(select_redelivery.requester, n.tenant, n.event_type))
              -- The window bounds filter the probed numbers, never lead: on a table never
              -- analyzed (reltuples -1, as after a bulk load into a new store) the planner took
              -- the origin_seq index for each named stream and read the whole window once per
              -- stream.
              and (select_redelivery.from_seq is null or n.origin_seq >= select_redelivery.from_seq)
              and (select_redelivery.to_seq is null or n.origin_seq < select_redelivery.to_seq)
              and (select_redelivery.type_seq_ranges is null or select_redelivery.type_seq_ranges @> n.type_seq)
            order by x.stream_version
            -- Also a fence: the subquery stays a per-stream index walk.
            limit page
        ) e
        order by e.stream_id, e.stream_version
        limit page;
        return;
    end if;

    -- A wide window is walked in stream order from the cursor, each row of the lane read at most
    -- once over all the pages of a request (_redelivery_walk, redelivery_walk.sql).
    -- When every requested (tenant, type) pair is granted (a named-tenant request always is: the
    -- pump refuses one that is not), the walk checks no grant per row: a backfill's page spent
    -- 40% of its time in a grant lookup per event. Decided once for up to 1000 pairs; beyond, or
    -- when a pair is not granted, every row is checked as before (invariant 11).
    all_granted := select_redelivery.requester is not null
        and pg_catalog.cardinality(select_redelivery.tenants) * pg_catalog.cardinality(select_redelivery.event_types) <= 1000
        and not exists (
            select from pg_catalog.unnest(select_redelivery.tenants) t(tenant)
            cross join pg_catalog.unnest(select_redelivery.event_types) y(event_type)
            where not streamseal._granted(select_redelivery.requester, t.tenant, y.event_type));
    return query
    select w.* from streamseal._redelivery_walk(self, select_redelivery.after_stream, select_redelivery.after_version, page,
        select_redelivery.event_types, select_redelivery.tenants,
        grants_of => case when not all_granted then select_redelivery.requester end,
        state_only => select_redelivery.state_only, at_most_once_types => amo_types,
        from_seq => select_redelivery.from_seq, to_seq => select_redelivery.to_seq,
        type_seq_ranges => select_redelivery.type_seq_ranges) w;
end
$$;

-- redelivery_unservable returns what a request for (tenants x event_types) asked for that this
-- origin cannot serve, as (tenant, event_type, reason, type_seqs, origin_seqs) rows with a
-- non-empty multirange, so the requester records an accepted loss (invariant 6) instead of
-- asking forever. Two parts, each answered when its dimension was asked for:
--
--   type_seq_ranges given: per requested (tenant, event_type), the requested type_seqs within
--     [1, that pair's last type_seq] that the reaper removed ('reaped_ephemeral': an ephemeral
--     event past its grace, an accepted loss), that are otherwise absent from the store (closed,
--     deleted: 'absent'), or present as at-most-once occurrences ('at_most_once'), and the requested
--     type_seqs the pair never reached, above its counter or below 1 ('never_existed'). Rows
--     carry type_seqs.
--   an origin_seq window given (from_seq and/or to_seq): within
--     [from_seq, least(to_seq, last stamped origin_seq + 1)) the own-lane origin_seqs held by no
--     event ('absent', tenant and event_type null: nobody knows what they were), those the reaper
--     removed of the requested tenants and types ('reaped_ephemeral'; reaped ones of other types
--     are not reported at all) and those of at-most-once occurrences of the requested tenants
--     and types ('at_most_once'). Rows carry
--     origin_seqs. Numbers the stamper has not handed out yet are not reported: they may still come.
--
-- When both are given the request is conjunctive, as in select_redelivery: an at-most-once
-- occurrence is reported only when it lies in both; an absent number is reported by the part
-- that can name it (its tenant and type, or its origin_seq are unknown). A request giving
-- neither asked for no numbers, and none are named. Cost: the type part reads the requested
-- type_seqs present in the store, bounded by the pair's counter; the window part reads the
-- window, bounded by stamp_state. Both build multiranges from the rows present (range_agg over
-- int8range(seq, seq + 1)) and subtract them from what was asked, never enumerating numbers.
create function streamseal.redelivery_unservable(
    tenants text[],
    event_types text[],
    from_seq bigint default null,
    to_seq bigint default null,
    type_seq_ranges int8multirange default null,
    requester text default null)
returns table (tenant text, event_type text, reason text, type_seqs int8multirange, origin_seqs int8multirange)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: the window bounds and the parts that do not apply fold away only when
-- the planner sees the actual values.
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    window_asked boolean := redelivery_unservable.from_seq is not null or redelivery_unservable.to_seq is not null;
    lo bigint;
    hi bigint;
begin
    -- As in select_redelivery: a requester is told only about pairs it is granted (invariant 11).
    if redelivery_unservable.requester is not null and redelivery_unservable.tenants is null
       and streamseal._list_problem(redelivery_unservable.event_types) is null then
        redelivery_unservable.tenants := streamseal._granted_tenants(redelivery_unservable.requester, redelivery_unservable.event_types);
        if pg_catalog.cardinality(redelivery_unservable.tenants) = 0 then
            return;
        end if;
    end if;
    perform streamseal._require_redelivery_scope('redelivery_unservable', redelivery_unservable.tenants,
        redelivery_unservable.event_types, redelivery_unservable.from_seq, redelivery_unservable.to_seq,
        redelivery_unservable.type_seq_ranges);
    -- The window part's bounds, as plain values so the planner sees them (custom plans) and
    -- walks the (origin, origin_seq) index over exactly [lo, hi): never past the last stamped.
    if window_asked then
        select greatest(coalesce(redelivery_unservable.from_seq, 1), 1),
               least(coalesce(redelivery_unservable.to_seq, s.last_origin_seq + 1), s.last_origin_seq + 1)
        into lo, hi
        from streamseal.stamp_state s;
        hi := greatest(lo, hi);
    end if;

    return query
    with pairs as materialized (
        -- Each requested (tenant, event_type), what of it the counter covers and what it never reached.
        -- Materialized: inlined, asked was recomputed (a multirange intersection, O(ranges)) for
        -- every event the read below filters with it, O(rows x ranges): 1.1 s for a request of
        -- 1000 ranges over 4000 events instead of a few ms.
        select r.tenant, r.event_type,
               redelivery_unservable.type_seq_ranges * r.reached as asked,
               redelivery_unservable.type_seq_ranges - r.reached as never_existed
        from (
            select t.tenant, y.event_type,
                   pg_catalog.int8multirange(pg_catalog.int8range(1, coalesce(c.last_type_seq, 0) + 1)) as reached
            from (select distinct u.tenant from pg_catalog.unnest(redelivery_unservable.tenants) as u(tenant)) t
            cross join (select distinct u.event_type from pg_catalog.unnest(redelivery_unservable.event_types) as u(event_type)) y
            left join streamseal.type_seq_counters c on c.tenant = t.tenant and c.event_type = y.event_type
        ) r
        where redelivery_unservable.type_seq_ranges is not null
          and (redelivery_unservable.requester is null
               or streamseal._granted(redelivery_unservable.requester, r.tenant, r.event_type))
    ), type_part as (
        select p.tenant, p.event_type, p.asked, p.never_existed,
               coalesce(held.present, '{}') as present, coalesce(held.at_most_once, '{}') as at_most_once,
               coalesce((select rp.type_seqs from streamseal.reaped_ephemeral rp
                         where rp.tenant = p.tenant and rp.event_type = p.event_type), '{}') as reaped
        from pairs p
        cross join lateral (
            select pg_catalog.range_agg(pg_catalog.int8range(e.type_seq, e.type_seq + 1)) as present,
                   pg_catalog.range_agg(pg_catalog.int8range(e.type_seq, e.type_seq + 1)) filter (
                       where e.flags in (2, 3, 6, 7)
                         and (redelivery_unservable.from_seq is null or e.origin_seq >= redelivery_unservable.from_seq)
                         and (redelivery_unservable.to_seq is null or e.origin_seq < redelivery_unservable.to_seq)
                   ) as at_most_once
            from streamseal.event_numbers e
            where e.origin = self and e.tenant = p.tenant and e.event_type = p.event_type
              -- The bounds let an index on (origin, tenant, event_type, type_seq) serve the read.
              and e.type_seq >= pg_catalog.lower(p.asked) and e.type_seq < pg_catalog.upper(p.asked)
              and p.asked @> e.type_seq
        ) held
    ), window_held as (
        select coalesce(pg_catalog.range_agg(pg_catalog.int8range(e.origin_seq, e.origin_seq + 1)), '{}') as present
        from streamseal.event_numbers e
        where window_asked and e.origin = self and e.origin_seq >= lo and e.origin_seq < hi
    ), window_reaped as (
        -- Reaped own ephemeral events (reap_ephemeral) in the window: named with their tenant and
        -- type when the request asked for those, and never reported absent.
        select rp.tenant, rp.event_type,
               rp.origin_seqs * pg_catalog.int8multirange(pg_catalog.int8range(lo, hi)) as origin_seqs,
               rp.tenant = any (redelivery_unservable.tenants)
               and rp.event_type = any (redelivery_unservable.event_types) as asked
        from streamseal.reaped_ephemeral rp
        where window_asked
    ), window_at_most_once as (
        select e.tenant, e.event_type, pg_catalog.range_agg(pg_catalog.int8range(e.origin_seq, e.origin_seq + 1)) as origin_seqs
        from streamseal.event_numbers e
        where window_asked and e.origin = self and e.origin_seq >= lo and e.origin_seq < hi
          and e.flags in (2, 3, 6, 7) -- at-most-once (bit 2), spelled as values: see select_redelivery
          and e.tenant = any (redelivery_unservable.tenants)
          and e.event_type = any (redelivery_unservable.event_types)
          and (redelivery_unservable.requester is null
               or streamseal._granted(redelivery_unservable.requester, e.tenant, e.event_type))
          and (redelivery_unservable.type_seq_ranges is null or redelivery_unservable.type_seq_ranges @> e.type_seq)
        group by e.tenant, e.event_type
    ), answer as (
        select tp.tenant, tp.event_type, 'absent'::text as reason, tp.asked - tp.present - tp.reaped as type_seqs,
               null::pg_catalog.int8multirange as origin_seqs
        from type_part tp
        union all
        select tp.tenant, tp.event_type, 'reaped_ephemeral', (tp.asked - tp.present) * tp.reaped, null
        from type_part tp
        union all
        select tp.tenant, tp.event_type, 'at_most_once', tp.at_most_once, null
        from type_part tp
        union all
        select tp.tenant, tp.event_type, 'never_existed', tp.never_existed, null
        from type_part tp
        union all
        select null, null, 'absent', null, pg_catalog.int8multirange(pg_catalog.int8range(lo, hi)) - w.present
            - coalesce((select pg_catalog.range_agg(r.origin_seqs) from window_reaped r), '{}')
        from window_held w
        where window_asked
        union all
        select r.tenant, r.event_type, 'reaped_ephemeral', null, r.origin_seqs - w.present
        from window_reaped r cross join window_held w
        where r.asked
        union all
        select m.tenant, m.event_type, 'at_most_once', null, m.origin_seqs
        from window_at_most_once m
    )
    select a.tenant, a.event_type, a.reason, a.type_seqs, a.origin_seqs
    from answer a
    where not pg_catalog.isempty(coalesce(a.type_seqs, a.origin_seqs))
    order by a.type_seqs is null, a.tenant nulls first, a.event_type, a.reason;
end
$$;
