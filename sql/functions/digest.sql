-- Stream digests: the per-bucket fold every comparison starts from. The write-path triggers
-- (event_triggers.sql) feed deltas in; recompute_digests() is the independent answer from the
-- store that verify_stream_digests() and tests hold the maintained table against.

-- _apply_digest_deltas folds deltas into stream_digests: XOR the hashes, add the signed counts.
-- Buckets are upserted in key order so two transactions folding overlapping buckets lock them
-- in the same order and cannot deadlock. PL/pgSQL, not SQL (issue 20): a SQL function that
-- cannot be inlined (it has SET clauses) plans its body again in every transaction, which was
-- most of the fold's cost for a stamper batch of 50 events; PL/pgSQL keeps the plan.
create function streamseal._apply_digest_deltas(deltas streamseal._digest_delta[])
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    insert into streamseal.stream_digests as d (origin, tenant, event_type, stream_id, x0, x1, n, updated_at)
    select delta.origin, delta.tenant, delta.event_type, delta.stream_id, delta.x0, delta.x1, delta.n, pg_catalog.now()
    from pg_catalog.unnest(_apply_digest_deltas.deltas) as delta
    order by delta.origin, delta.tenant, delta.event_type, delta.stream_id
    on conflict (origin, tenant, event_type, stream_id) do update
        set x0 = d.x0 # excluded.x0,
            x1 = d.x1 # excluded.x1,
            n = d.n + excluded.n,
            updated_at = excluded.updated_at;
end
$$;

-- recompute_digests folds the store from scratch: what stream_digests must equal (invariant 4).
-- lane names an origin; null means every lane. Cost is a scan of the lane; it is the verification path, never
-- the hot path.
create function streamseal.recompute_digests(lane text default null)
returns table (origin text, tenant text, event_type text, stream_id text, x0 bigint, x1 bigint, n bigint)
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select e.origin, e.tenant, e.event_type, e.stream_id,
           pg_catalog.bit_xor(streamseal._h0(e.event_id)),
           pg_catalog.bit_xor(streamseal._h1(e.event_id)),
           pg_catalog.count(*)
    from streamseal.event_numbers e
    where streamseal._counts_in_digest(e.origin_seq, e.flags)
      and (recompute_digests.lane is null or e.origin = recompute_digests.lane)
    group by e.origin, e.tenant, e.event_type, e.stream_id
$$;
