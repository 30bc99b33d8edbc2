-- verify_stream_digests: the trust-but-verify check of stream_digests against a recompute from
-- the store (invariant 4). The sweep calls it; so may an operator. Any row it returns is drift
-- from an unaccounted write path and is an alarm, healed or not.

-- verify_stream_digests compares every bucket of a lane (every lane when lane is null) with
-- recompute_digests() and returns the buckets that differ: 'drift' (both sides have events,
-- folds differ), 'missing' (events with no maintained fold), 'phantom' (a fold with no events).
-- A bucket folded to (0, 0, 0) counts as empty. With heal, each difference is folded back in as a
-- delta against what this call read, so a write that commits meanwhile is never overwritten.
create function streamseal.verify_stream_digests(heal boolean default true, lane text default null)
returns setof streamseal._digest_difference
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    differences streamseal._digest_difference[];
begin
    -- One statement, one snapshot: the table and the store are compared as of the same instant.
    with stored as (
        select d.origin, d.tenant, d.event_type, d.stream_id, d.x0, d.x1, d.n
        from streamseal.stream_digests d
        where (verify_stream_digests.lane is null or d.origin = verify_stream_digests.lane)
          and (d.x0, d.x1, d.n) <> (0, 0, 0)
    ), actual as (
        select * from streamseal.recompute_digests(verify_stream_digests.lane)
    )
    select pg_catalog.array_agg(row(
               coalesce(s.origin, a.origin), coalesce(s.tenant, a.tenant),
               coalesce(s.event_type, a.event_type), coalesce(s.stream_id, a.stream_id),
               case when s.origin is null then 'missing' when a.origin is null then 'phantom' else 'drift' end,
               coalesce(s.x0, 0), coalesce(s.x1, 0), coalesce(s.n, 0),
               coalesce(a.x0, 0), coalesce(a.x1, 0), coalesce(a.n, 0))::streamseal._digest_difference
           order by coalesce(s.origin, a.origin), coalesce(s.tenant, a.tenant),
                    coalesce(s.event_type, a.event_type), coalesce(s.stream_id, a.stream_id))
    into differences
    from stored s
    full join actual a
      on a.origin = s.origin and a.tenant = s.tenant and a.event_type = s.event_type and a.stream_id = s.stream_id
    where s.origin is null or a.origin is null or (s.x0, s.x1, s.n) <> (a.x0, a.x1, a.n);

    if verify_stream_digests.heal and differences is not null then
        perform streamseal._apply_digest_deltas(pg_catalog.array_agg(row(df.origin, df.tenant, df.event_type, df.stream_id,
                    df.stored_x0 # df.actual_x0, df.stored_x1 # df.actual_x1,
                    df.actual_n - df.stored_n)::streamseal._digest_delta))
        from pg_catalog.unnest(differences) df;
    end if;

    return query select * from pg_catalog.unnest(differences);
end
$$;
