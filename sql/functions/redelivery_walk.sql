-- redelivery_walk.sql: the one walk of a lane in stream order that redelivery's wide selections
-- share: select_redelivery's own-lane pages (a backfill's, a wide repair's) and
-- select_forwarded_copies' pages of other lanes (backfill_answers.sql). Each states its filters;
-- the walk (chunks of the stream index, the cursor, the doubling) is written once, here.

-- _redelivery_walk returns up to page events of lane, in (stream_id, stream_version) order
-- strictly after the keyset (after_stream, after_version) (null: from the lane's start), that pass
-- every filter: stamped; of event_types; of tenants (null: any tenant); granted to grants_of
-- (null: not checked, the caller decided it for every pair); within [from_seq, to_seq) and
-- type_seq_ranges (null: unbounded); no at-most-once occurrence unless its type is in
-- at_most_once_types; no ephemeral event when state_only (a backfill ships none). A page shorter
-- than page means the lane holds no more. Cost: it walks the (origin, stream_id, stream_version)
-- index from the cursor in chunks (_stream_walk) and filters each chunk, starting with one page's
-- worth and doubling (up to 16 pages) while the filters let little through: every row of the lane
-- is read at most once over all the pages of a request, whatever the planner believes about the
-- filters. (Left to the planner, a table whose statistics predate a bulk load got a scan of the
-- whole window and a sort for every page: 70 ms a page at 100k rows, O(window x pages).)
-- A backfill's walk (state_only, no at-most-once opt-in) reads only the streams that hold an
-- asked type: before each chunk it moves the cursor to the first stream at or after it that
-- stream_digests names for an asked type and tenant (_redelivery_next_stream), and ends when
-- none is left. Every event such a walk ships (stamped, neither ephemeral nor at-most-once) is
-- counted in its stream's digest in the transaction that numbered or ingested it (invariant 4),
-- so no stream holding one is skipped; an ephemeral event or an at-most-once occurrence is in no
-- digest, so a walk that ships them (a plain repair, an opt-in) reads every stream as before.
-- (bench backfill: the origin's live stream of another type sorted before the history and the
-- first page of the first answer read ~60 000 rows, 1 s, and as long again paced.)
create function streamseal._redelivery_walk(
    lane text,
    after_stream text,
    after_version bigint,
    page integer,
    event_types text[],
    tenants text[] default null,
    grants_of text default null,
    state_only boolean default false,
    at_most_once_types text[] default null,
    from_seq bigint default null,
    to_seq bigint default null,
    type_seq_ranges int8multirange default null)
returns setof streamseal._redelivery_row
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
as $$
declare
    walk_stream text := _redelivery_walk.after_stream;
    walk_version bigint := _redelivery_walk.after_version;
    chunk_size integer := _redelivery_walk.page;
    chunk_rows bigint;
    last_stream text;
    last_version bigint;
    returned integer := 0;
    picked integer;
    skip_streams boolean := _redelivery_walk.state_only
        and coalesce(pg_catalog.cardinality(_redelivery_walk.at_most_once_types), 0) = 0;
    next_stream text;
begin
    -- Each chunk's passing rows are returned straight from one statement; the chunk's size and
    -- last key are read (a second walk of the same chunk) only when it left the page short. A
    -- backfill of a type the lane mostly holds fills its page from the first chunk, so that is
    -- one statement a page. (Before: the chunk materialized, its passing rows aggregated into an
    -- array and unnested back, 12 ms a 500-event page of 400-byte payloads against 1.6 ms for the
    -- walk itself, the origin's largest SQL cost in bench backfill.)
    loop
        if skip_streams then
            next_stream := streamseal._redelivery_next_stream(_redelivery_walk.lane, walk_stream,
                _redelivery_walk.event_types, _redelivery_walk.tenants);
            exit when next_stream is null; -- no stream from the cursor on holds an asked type
            if walk_stream is null or next_stream > walk_stream then
                walk_stream := next_stream;
                walk_version := 0; -- versions start at 1 (_event_problem): the whole stream
            end if;
        end if;
        return query
        select c.event_id, c.origin_seq, c.type_seq, c.tenant, c.stream_id, c.stream_version, c.event_type,
               c.flags, c.payload, c.metadata, c.occurred_at
        from streamseal._stream_walk(_redelivery_walk.lane, walk_stream, walk_version, chunk_size) c
        where c.origin_seq is not null
          -- At-most-once (bit 2) only of an opted-in type; ephemeral (bit 1) not in a backfill.
          -- Spelled as the values flags takes (bits 1, 2 and 4 only).
          and (c.flags in (0, 1, 4, 5) or (c.flags in (2, 6) and c.event_type = any (_redelivery_walk.at_most_once_types)))
          and not (_redelivery_walk.state_only and c.flags in (1, 5))
          and (_redelivery_walk.tenants is null or c.tenant = any (_redelivery_walk.tenants))
          and c.event_type = any (_redelivery_walk.event_types)
          and (_redelivery_walk.grants_of is null or streamseal._granted(_redelivery_walk.grants_of, c.tenant, c.event_type))
          and (_redelivery_walk.from_seq is null or c.origin_seq >= _redelivery_walk.from_seq)
          and (_redelivery_walk.to_seq is null or c.origin_seq < _redelivery_walk.to_seq)
          and (_redelivery_walk.type_seq_ranges is null or _redelivery_walk.type_seq_ranges @> c.type_seq)
        order by c.stream_id, c.stream_version
        limit _redelivery_walk.page - returned;
        get diagnostics picked = row_count;
        returned := returned + picked;
        exit when returned >= _redelivery_walk.page;
        -- Short: where did the chunk end, and was it the lane's end?
        select pg_catalog.count(*),
               (pg_catalog.array_agg(k.stream_id order by k.stream_id desc, k.stream_version desc))[1],
               (pg_catalog.array_agg(k.stream_version order by k.stream_id desc, k.stream_version desc))[1]
        into chunk_rows, last_stream, last_version
        from streamseal._stream_walk(_redelivery_walk.lane, walk_stream, walk_version, chunk_size) k;
        exit when chunk_rows < chunk_size;
        walk_stream := last_stream;
        walk_version := last_version;
        chunk_size := least(chunk_size * 2, 16 * _redelivery_walk.page);
    end loop;
end
$$;

-- _redelivery_next_stream returns the first stream of lane at or after from_stream (null: the
-- lane's start) that stream_digests holds a bucket of for one of event_types and tenants (null:
-- any tenant), or null when there is none: where a backfill's walk goes on (_redelivery_walk).
-- It walks the (origin, stream_id) index from from_stream, one row per (stream, tenant, type),
-- never the events of the streams it passes; sorts, bitmap and sequential scans are off so a
-- table not analyzed since a burst of new buckets keeps that plan (as _digest_stream_walk).
create function streamseal._redelivery_next_stream(lane text, from_stream text, event_types text[], tenants text[])
returns text
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set enable_sort = off
set enable_bitmapscan = off
set enable_seqscan = off
set plan_cache_mode = force_custom_plan
as $$
declare
    found text;
begin
    select d.stream_id into found
    from streamseal.stream_digests d
    where d.origin = _redelivery_next_stream.lane
      and (_redelivery_next_stream.from_stream is null or d.stream_id >= _redelivery_next_stream.from_stream)
      and d.event_type = any (_redelivery_next_stream.event_types)
      and (_redelivery_next_stream.tenants is null or d.tenant = any (_redelivery_next_stream.tenants))
    order by d.stream_id
    limit 1;
    return found;
end
$$;
