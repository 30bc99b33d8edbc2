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
    found streamseal._redelivery_row[];
begin
    loop
        with chunk as materialized (
            select w.* from streamseal._stream_walk(_redelivery_walk.lane, walk_stream, walk_version, chunk_size) w
        ), picked as (
            select c.event_id, c.origin_seq, c.type_seq, c.tenant, c.stream_id, c.stream_version, c.event_type,
                   c.flags, c.payload, c.metadata, c.occurred_at
            from chunk c
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
            limit _redelivery_walk.page - returned
        )
        select pg_catalog.array_agg(p order by p.stream_id, p.stream_version),
               (select pg_catalog.count(*) from chunk),
               (select k.stream_id from chunk k order by k.stream_id desc, k.stream_version desc limit 1),
               (select k.stream_version from chunk k order by k.stream_id desc, k.stream_version desc limit 1)
        into found, chunk_rows, last_stream, last_version
        from picked p;

        if found is not null then
            return query select f.* from pg_catalog.unnest(found) f;
            returned := returned + pg_catalog.cardinality(found);
        end if;
        exit when returned >= _redelivery_walk.page or chunk_rows < chunk_size;
        walk_stream := last_stream;
        walk_version := last_version;
        chunk_size := least(chunk_size * 2, 16 * _redelivery_walk.page);
    end loop;
end
$$;
