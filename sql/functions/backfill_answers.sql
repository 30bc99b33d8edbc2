-- backfill_answers.sql: the origin side of a backfill beyond select_redelivery's own lane: how
-- much a whole answer will ship (backfill_total, for the requester's progress), and a service
-- answering a backfill with the copies it holds of other origins' events (the proposal's Phase S: "a consumer that persisted forwarded copies may answer too;
-- extra sources converge harmlessly by event-id identity"), when its operator lets it
-- (--backfill-serve-copies on). The redelivery pump pages this after its own lane for a
-- state-only request that welcomes copies; the requester checks each bundle against its request
-- (check_redelivery_answer, lane) and ingest skips what it holds already.

-- select_forwarded_copies returns one page of the copies this service holds of other origins'
-- events of event_types that requester is granted here (grants.sql: this service's operator
-- decides what it forwards), in (origin, stream_id, stream_version) order, strictly after the
-- keyset (after_lane, after_stream, after_version) (all null: from the start; after_stream null
-- with after_lane given: from that lane's start). A page holds at most least(max_events, cap)
-- rows; a shorter page is the last. Never selected: this service's own events (select_redelivery
-- ships those), the requester's own events (it is their origin), ephemeral events (a backfill
-- ships none), and at-most-once occurrences unless their type is in at_most_once_types (a
-- backfill's per-type opt-in). Payloads are returned as stored (invariant 3). Cost: one
-- loose index walk over the origins held, then each lane walked from the cursor
-- (_redelivery_walk, the walk select_redelivery pages its own lane with): every row of a lane is
-- read at most once over all the pages of a request.
create function streamseal.select_forwarded_copies(
    requester text,
    event_types text[],
    after_lane text default null,
    after_stream text default null,
    after_version bigint default null,
    max_events integer default 500,
    cap integer default 10000,
    at_most_once_types text[] default null)
returns table (origin text, event_id uuid, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
               stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
               occurred_at timestamptz)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
as $$
declare
    self text := streamseal.service_name();
    problem text;
    page integer;
    lane text;
    walk_stream text;
    walk_version bigint;
    returned integer := 0;
    found integer;
begin
    if select_forwarded_copies.requester is null or select_forwarded_copies.requester !~ '^[a-z][a-z0-9-]{0,62}$' then
        raise exception 'select_forwarded_copies: requester % is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
            coalesce(pg_catalog.quote_literal(select_forwarded_copies.requester), 'null')
            using errcode = '22023';
    end if;
    problem := streamseal._list_problem(select_forwarded_copies.event_types);
    if problem is not null then
        raise exception 'select_forwarded_copies: a backfill must name its event types: %', problem
            using errcode = '22023';
    end if;
    if select_forwarded_copies.after_lane is null and select_forwarded_copies.after_stream is not null
       or (select_forwarded_copies.after_stream is null) <> (select_forwarded_copies.after_version is null) then
        raise exception 'select_forwarded_copies: keyset cursor (%, %, %) is half given: expected a lane, or a lane with a stream and a version, or none',
            coalesce(pg_catalog.quote_literal(select_forwarded_copies.after_lane), 'null'),
            coalesce(pg_catalog.quote_literal(select_forwarded_copies.after_stream), 'null'),
            coalesce(select_forwarded_copies.after_version::text, 'null')
            using errcode = '22023';
    end if;
    if select_forwarded_copies.max_events is null or select_forwarded_copies.max_events < 1
       or select_forwarded_copies.cap is null or select_forwarded_copies.cap < 1 then
        raise exception 'select_forwarded_copies: max_events % and cap % are invalid: expected positive limits',
            coalesce(select_forwarded_copies.max_events::text, 'null'), coalesce(select_forwarded_copies.cap::text, 'null')
            using errcode = '22023';
    end if;
    page := least(select_forwarded_copies.max_events, select_forwarded_copies.cap);

    lane := select_forwarded_copies.after_lane;
    walk_stream := select_forwarded_copies.after_stream;
    walk_version := select_forwarded_copies.after_version;
    if lane is null then
        -- The first lane held: the least origin in the (origin, stream_id, stream_version) index.
        select min(e.origin) into lane from streamseal.events e;
    end if;
    while lane is not null and returned < page loop
        if lane <> self and lane <> select_forwarded_copies.requester then
            -- No ephemeral event (a backfill ships none), at-most-once occurrences only of an
            -- opted-in type, and only what requester is granted here.
            return query
            select lane, w.* from streamseal._redelivery_walk(lane, walk_stream, walk_version, page - returned,
                select_forwarded_copies.event_types, grants_of => select_forwarded_copies.requester, state_only => true,
                at_most_once_types => select_forwarded_copies.at_most_once_types) w;
            get diagnostics found = row_count;
            returned := returned + found;
        end if;
        exit when returned >= page;
        -- The next lane held (a loose index walk: one probe per origin, not a scan of the store).
        select min(e.origin) into lane from streamseal.events e where e.origin > lane;
        walk_stream := null;
        walk_version := null;
    end loop;
end
$$;

-- backfill_total estimates how many events a whole state-only answer to requester for
-- event_types holds (the request and the follow-ups of its truncations), so the requester shows
-- progress as done/total: the own lane's counted events of the pairs requester is granted, plus,
-- when copies are served, the copies held of other lanes (requester's own excepted). Counted
-- from the maintained digests (stream_digests.n counts neither ephemeral events nor at-most-once
-- occurrences, exactly what a backfill leaves out), so it costs O(streams of the types), never a
-- read of the events; an opted-in type's at-most-once occurrences are not in it (an estimate).
create function streamseal.backfill_total(requester text, event_types text[], copies boolean default false)
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(pg_catalog.sum(p.n), 0)::bigint
    from (
        select d.tenant, d.event_type, pg_catalog.sum(d.n) as n
        from streamseal.stream_digests d
        where d.event_type = any (backfill_total.event_types)
          and (d.origin = streamseal.service_name()
               or (backfill_total.copies and d.origin <> backfill_total.requester))
        group by d.tenant, d.event_type
        -- A fence: the grant is looked up once per (tenant, type), not per stream.
        offset 0
    ) p
    where streamseal._granted(backfill_total.requester, p.tenant, p.event_type)
$$;
