-- ingest: how copies of other origins' events enter this store (the inbox, repair bundles,
-- backfill). Identity is kept exactly as the origin stamped it (invariant 3), and an event id
-- already held is skipped without a write, a fold or a trigger's work (invariant 2).

-- ingest stores a batch of copies and returns the ids it actually added. A bad copy refuses the
-- whole batch: nothing is written.
create function streamseal.ingest(copies streamseal.event_copy[])
returns setof uuid
language plpgsql
volatile
-- Runs as its owner, so streamseal_application needs no privilege on events or the digest and
-- epoch tables the insert trigger writes (privileges.sql).
security definer
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    self text := streamseal.service_name();
    bad record;
    lim record;
    bad_origins text[];
    repeats boolean;
    added uuid[];
begin
    -- The table, not limits(): a function with a SET clause costs a call per batch on the hot path.
    select l.max_payload_bytes, l.max_id_bytes, l.max_metadata_bytes into lim from streamseal.limits l;
    -- The service-name rule once per distinct origin (a batch holds one or a few), not per copy:
    -- the regex costs ~4.5 µs a match, a sixth of a copy's whole ingest (bench backfill). The
    -- fence (offset 0) keeps the planner from pushing the match below the distinct, where it ran
    -- once per copy after all (issue 16, write3: perf put ~6% of a 500-copy ingest there).
    select pg_catalog.array_agg(o.origin) into bad_origins
    from (select distinct c.origin from pg_catalog.unnest(ingest.copies) as c where c.origin is not null
          offset 0) o
    where o.origin !~ '^[a-z][a-z0-9-]{0,62}$';
    -- GUARD: every copy carries its origin's identity and passes the checks an own event does.
    select c.position, c.event_id, case
        when c.event_id is null then 'event_id is required'
        when c.origin is null then 'origin is required'
        when c.origin = any (bad_origins) then pg_catalog.format('origin %L is not a service name', c.origin)
        when c.origin = self then pg_catalog.format('origin "%s" is this service: a copy cannot claim it', c.origin)
        when c.origin_seq is null or c.origin_seq < 1 then 'origin_seq is required (>= 1)'
        when c.type_seq is null or c.type_seq < 1 then 'type_seq is required (>= 1)'
        else streamseal._event_problem(c.tenant, c.stream_id, c.stream_version, c.event_type, c.flags, c.payload,
             c.metadata, lim.max_payload_bytes, lim.max_id_bytes, lim.max_metadata_bytes)
    end as problem
    into bad
    from pg_catalog.unnest(ingest.copies) with ordinality as c(event_id, origin, origin_seq, type_seq, tenant,
         stream_id, stream_version, event_type, flags, payload, metadata, occurred_at, position)
    where c.event_id is null or c.origin is null or c.origin = any (bad_origins) or c.origin = self
       or c.origin_seq is null or c.origin_seq < 1 or c.type_seq is null or c.type_seq < 1
       or streamseal._event_problem(c.tenant, c.stream_id, c.stream_version, c.event_type, c.flags, c.payload,
             c.metadata, lim.max_payload_bytes, lim.max_id_bytes, lim.max_metadata_bytes) is not null
    order by c.position
    limit 1;
    if found then
        raise exception 'ingest: copy % (#% of the batch): %', coalesce(bad.event_id::text, '(no id)'), bad.position, bad.problem
            using errcode = '22023';
    end if;

    -- GUARD: one id, one content. Sorting whole rows costs; only a batch that repeats an id pays it.
    select pg_catalog.count(*) <> pg_catalog.count(distinct c.event_id) into repeats
    from pg_catalog.unnest(ingest.copies) as c;
    if repeats then
        select c.event_id into bad
        from pg_catalog.unnest(ingest.copies) as c
        group by c.event_id
        having pg_catalog.count(distinct c) > 1
        limit 1;
        if found then
            raise exception 'ingest: event % appears more than once in the batch with different content', bad.event_id
                using errcode = '22023';
        end if;
    else
        -- Fast path: every id is new here (the common case: the inbox's live copies). A plain
        -- INSERT costs ~30% less than INSERT ... ON CONFLICT, whose speculative insertion is paid
        -- per row even when nothing conflicts. An id already held (a re-delivery, a repair that
        -- crossed the live copy, a concurrent ingest of the same copy) fails it with a
        -- unique_violation: the block's subtransaction undoes it all and the conflict-skipping
        -- statement below runs instead. Any other error propagates as before. One subtransaction
        -- per call: callers ingest one batch per transaction (inbox, receiver).
        begin
            with stored_copies as (
                insert into streamseal.events as stored (event_id, origin, origin_seq, type_seq, tenant, stream_id,
                                                        stream_version, event_type, flags, payload, metadata, occurred_at)
                select c.event_id, c.origin, c.origin_seq, c.type_seq, c.tenant, c.stream_id, c.stream_version,
                       c.event_type, coalesce(c.flags, 0), c.payload, c.metadata, coalesce(c.occurred_at, pg_catalog.now())
                from pg_catalog.unnest(ingest.copies) as c
                returning stored.event_id, stored.local_id
            )
            select pg_catalog.array_agg(s.event_id order by s.local_id) into added from stored_copies s;
            return query select a.event_id from pg_catalog.unnest(added) with ordinality as a(event_id, position)
                         order by a.position;
            return;
        exception when unique_violation then
            -- An id already held (or another unique key: the statement below raises it again).
        end;
    end if;

    return query
    with distinct_copies as (
        select distinct on (c.event_id) c.*
        from pg_catalog.unnest(ingest.copies) with ordinality as c(event_id, origin, origin_seq, type_seq, tenant,
             stream_id, stream_version, event_type, flags, payload, metadata, occurred_at, position)
        order by c.event_id, c.position
    )
    insert into streamseal.events as stored (event_id, origin, origin_seq, type_seq, tenant, stream_id,
                                            stream_version, event_type, flags, payload, metadata, occurred_at)
    select d.event_id, d.origin, d.origin_seq, d.type_seq, d.tenant, d.stream_id, d.stream_version,
           d.event_type, coalesce(d.flags, 0), d.payload, d.metadata, coalesce(d.occurred_at, pg_catalog.now())
    from distinct_copies d
    order by d.position
    on conflict (event_id) do nothing
    returning stored.event_id;
end
$$;
