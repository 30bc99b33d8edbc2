-- append: how an application stores its own events. They land unstamped; the stamper numbers
-- them in commit order. A plain INSERT with origin = service_name() and origin_seq null is
-- equally valid for a role that may insert into events (the owner); an application connecting
-- with streamseal_application may not, and appends here (validation with clear messages, batch
-- deduplication).

-- append stores a batch of own events in one statement and returns their ids in batch order.
-- A bad event refuses the whole batch: nothing is written. An id repeated with identical content
-- is stored once; repeated with different content it is refused. An id already in the store is
-- refused by the primary key (an append is not a retry-safe upsert).
create function streamseal.append(events streamseal.new_event[])
returns setof uuid
language plpgsql
volatile
-- Runs as its owner, so streamseal_application needs no privilege on events or the digest tables
-- the insert trigger writes (privileges.sql).
security definer
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    self text;
    given_ids bigint;
    distinct_ids bigint;
    first_bad bigint;
    bad record;
    lim record;
begin
    -- The table, not limits(): a function with a SET clause costs a call per batch on the hot path.
    select l.max_payload_bytes, l.max_id_bytes, l.max_metadata_bytes into lim from streamseal.limits l;
    select s.name into self from streamseal.service s;
    if self is null then
        perform streamseal.service_name(); -- raises the "no service name" error
    end if;

    -- GUARD: every event complete, flags known, one content per id. One pass when all is well.
    select pg_catalog.count(e.event_id), pg_catalog.count(distinct e.event_id),
           pg_catalog.min(e.position) filter (where streamseal._event_problem(
               e.tenant, e.stream_id, e.stream_version, e.event_type, e.flags, e.payload, e.metadata,
               lim.max_payload_bytes, lim.max_id_bytes, lim.max_metadata_bytes) is not null)
    into given_ids, distinct_ids, first_bad
    from pg_catalog.unnest(append.events) with ordinality as e(event_id, tenant, stream_id, stream_version,
         event_type, flags, payload, metadata, occurred_at, position);
    if first_bad is not null then
        select e.event_id, streamseal._event_problem(e.tenant, e.stream_id, e.stream_version, e.event_type,
               e.flags, e.payload, e.metadata, lim.max_payload_bytes, lim.max_id_bytes, lim.max_metadata_bytes) as problem
        into bad
        from pg_catalog.unnest(append.events) with ordinality as e(event_id, tenant, stream_id, stream_version,
             event_type, flags, payload, metadata, occurred_at, position)
        where e.position = first_bad;
        raise exception 'append: event % (#% of the batch): %', coalesce(bad.event_id::text, '(new)'), first_bad, bad.problem
            using errcode = '22023';
    end if;
    if distinct_ids < given_ids then
        select e.event_id into bad
        from pg_catalog.unnest(append.events) as e
        where e.event_id is not null
        group by e.event_id
        having pg_catalog.count(distinct e) > 1
        limit 1;
        if found then
            raise exception 'append: event % appears more than once in the batch with different content', bad.event_id
                using errcode = '22023';
        end if;
    end if;

    return query
    with numbered as (
        select coalesce(e.event_id, pg_catalog.gen_random_uuid()) as event_id, e.tenant, e.stream_id,
               e.stream_version, e.event_type, coalesce(e.flags, 0) as flags, e.payload, e.metadata,
               coalesce(e.occurred_at, pg_catalog.now()) as occurred_at, e.position
        from pg_catalog.unnest(append.events) with ordinality as e(event_id, tenant, stream_id, stream_version,
             event_type, flags, payload, metadata, occurred_at, position)
    ), distinct_events as (
        select distinct on (n.event_id) n.*
        from numbered n
        order by n.event_id, n.position
    )
    insert into streamseal.events as stored (event_id, origin, tenant, stream_id, stream_version, event_type,
                                            flags, payload, metadata, occurred_at)
    select d.event_id, self, d.tenant, d.stream_id, d.stream_version, d.event_type, d.flags, d.payload,
           d.metadata, d.occurred_at
    from distinct_events d
    order by d.position
    returning stored.event_id;
end
$$;

-- append (single) stores one own event; a thin wrapper over the batch form. It runs as its caller
-- (no SECURITY DEFINER): the batch form it calls is where the privilege boundary is.
create function streamseal.append(
    tenant text, stream_id text, stream_version bigint, event_type text, payload bytea,
    metadata jsonb default null, flags integer default 0, event_id uuid default null)
returns uuid
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    select streamseal.append(array[row(append.event_id, append.tenant, append.stream_id, append.stream_version,
        append.event_type, append.flags, append.payload, append.metadata, null)::streamseal.new_event])
$$;
