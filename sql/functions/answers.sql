-- Windowed digest answers: what an origin tells an auditing consumer, and what the consumer
-- computes of its own copy for the same window. Windows are half-open [from, to) in origin_seq;
-- the watermark returned is the exclusive end actually covered (capped at the lane's settled max)
-- and is the next window's from. Sealed epochs answer for the history they cover; only the open
-- fringes are folded live, so a healthy answer costs the open window, not the lane.

-- type_digests returns per (tenant, event_type) the fold of lane over [from_seq, watermark),
-- watermark = min(to_seq, settled max + 1), never below from_seq. Closed epochs lying wholly
-- inside the window come from digest_epochs (the whole sealed history from sealed_prefix, one row
-- per bucket); partly covered epochs and the open epoch fold live. A quiet window answers one
-- row with null tenant and event_type that carries only the watermark. One statement, one
-- snapshot: a close committing meanwhile cannot make a part count twice.
create function streamseal.type_digests(lane text, from_seq bigint, to_seq bigint, settle interval default interval '0')
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint, watermark bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: a generic plan for these range predicates may pick a sequential scan
-- that costs the whole store (measured: an idle close_epochs went from 0.3 ms to 31 ms at 300k rows).
set plan_cache_mode = force_custom_plan
as $$
begin
    if type_digests.lane is null or type_digests.from_seq is null or type_digests.to_seq is null
       or type_digests.from_seq < 0 or type_digests.to_seq < type_digests.from_seq then
        raise exception 'type_digests: window [%, %) of lane % is invalid: expected 0 <= from <= to',
            type_digests.from_seq, type_digests.to_seq, coalesce(pg_catalog.quote_literal(type_digests.lane), 'null')
            using errcode = '22023';
    end if;

    return query
    with bounds as (
        select greatest(type_digests.from_seq, least(type_digests.to_seq,
                   coalesce(streamseal._lane_settled_max(type_digests.lane, type_digests.settle), 0) + 1)) as watermark
    ), sealed_span as (
        -- Closed epochs lying wholly inside [from, watermark).
        select s.width, s.first_full, s.end_full, s.first_full = 0 and s.end_full = s.closed_through as whole_prefix
        from (
            select le.width, le.closed_through,
                   -- Sequences start at 1, so a window from 1 covers epoch 0 whole.
                   (case when type_digests.from_seq <= 1 then 0 else type_digests.from_seq end + le.width - 1) / le.width as first_full,
                   least(b.watermark / le.width, le.closed_through) as end_full
            from streamseal.lane_epochs le cross join bounds b
            where le.origin = type_digests.lane
        ) s
        where s.first_full < s.end_full
    ), parts as (
        -- The whole_prefix tests are uncorrelated subqueries on purpose: Postgres evaluates them
        -- once as a gate on the branch. As a join filter, "not whole_prefix" was checked row by
        -- row after reading every epoch row of the lane (30 ms at 100 epochs, O(history)).
        select p.tenant, p.event_type, p.x0, p.x1, p.n
        from streamseal.sealed_prefix p
        where p.origin = type_digests.lane and (select s.whole_prefix from sealed_span s)
        union all
        select d.tenant, d.event_type, d.x0, d.x1, d.n
        from streamseal.digest_epochs d cross join sealed_span s
        where d.origin = type_digests.lane and (select not s2.whole_prefix from sealed_span s2)
          and d.epoch >= s.first_full and d.epoch < s.end_full
        union all
        -- Below the sealed span (or the whole window when none lies inside it): live.
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from bounds b
        left join sealed_span s on true
        cross join lateral streamseal._epoch_fold(type_digests.lane, type_digests.from_seq,
                                                  coalesce(s.first_full * s.width, b.watermark)) f
        union all
        -- Above the sealed span: live.
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from bounds b
        cross join sealed_span s
        cross join lateral streamseal._epoch_fold(type_digests.lane, s.end_full * s.width, b.watermark) f
    ), folded as (
        select c.tenant, c.event_type, pg_catalog.bit_xor(c.x0) as x0, pg_catalog.bit_xor(c.x1) as x1,
               pg_catalog.sum(c.n)::bigint as n
        from parts c
        group by c.tenant, c.event_type
        having pg_catalog.bit_xor(c.x0) <> 0 or pg_catalog.bit_xor(c.x1) <> 0 or pg_catalog.sum(c.n) <> 0
    )
    select f.tenant, f.event_type, f.x0, f.x1, f.n, b.watermark
    from folded f cross join bounds b
    union all
    select null, null, 0::bigint, 0::bigint, 0::bigint, b.watermark
    from bounds b
    where not exists (select 1 from folded)
    order by 1, 2;
end
$$;

-- _digest_stream_walk returns the first n stream ids of lane after the cursor (all when null)
-- holding a non-empty bucket of the given types (null: any), in order, always by walking the
-- (origin, stream_id) index: sorts, hash aggregates and bitmap and sequential scans are switched
-- off here, so a table not analyzed since a burst of new buckets cannot turn a page into a read
-- of the whole lane (measured: 120 ms instead of 1 ms for a 500-stream page at 200 000 buckets).
create function streamseal._digest_stream_walk(lane text, types text[], after_stream text, n integer,
                                               tenants text[] default null)
returns table (stream_id text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set enable_sort = off
set enable_hashagg = off
set enable_bitmapscan = off
set enable_seqscan = off
set plan_cache_mode = force_custom_plan
as $$
begin
    -- Custom plans see the cursor as a constant, so it bounds the index scan (a null cursor
    -- folds away); the types stay a filter on the walk. Stream ids page in byte order (collate
    -- "C", the column's collation since migration 045), whatever the database's default or the
    -- caller's argument: the consumer reads the page's range in the same order (comparison.sql).
    return query
    select distinct d.stream_id
    from streamseal.stream_digests d
    where d.origin = _digest_stream_walk.lane
      and (_digest_stream_walk.after_stream is null or d.stream_id > _digest_stream_walk.after_stream collate "C")
      and (_digest_stream_walk.types is null or d.event_type = any (_digest_stream_walk.types))
      and (_digest_stream_walk.tenants is null or d.tenant = any (_digest_stream_walk.tenants))
      and (d.x0, d.x1, d.n) <> (0, 0, 0)
    order by d.stream_id
    limit _digest_stream_walk.n;
end
$$;

-- stream_digests_page returns stream-level buckets of lane over [from_seq, watermark) for the
-- given event types (null: all), for streams after after_stream (null: from the first), whole
-- streams per page: streams are taken in stream_id order while the page holds at most
-- max_buckets rows (the first stream always). Every row carries the watermark and resume_after:
-- the last stream of this page when more remain, null when the window is complete. An empty page
-- is one row with a null stream_id. A window covering the lane's whole history reads the
-- maintained stream_digests; any other window folds the store in the window (O(window) a page).
-- tenants (null: every tenant) narrows the page to those tenants' buckets: the drill-down of a
-- tenant fold (tenant_folds.sql) walks only the tenants whose tenant digests differed.
create function streamseal.stream_digests_page(
    lane text, types text[], from_seq bigint, to_seq bigint, after_stream text, max_buckets integer,
    settle interval default interval '0', tenants text[] default null)
returns table (stream_id text, tenant text, event_type text, x0 bigint, x1 bigint, n bigint,
               watermark bigint, resume_after text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: a generic plan for these range predicates may pick a sequential scan
-- that costs the whole store (measured: an idle close_epochs went from 0.3 ms to 31 ms at 300k rows).
set plan_cache_mode = force_custom_plan
as $$
declare
    watermark bigint;
    whole_history boolean;
begin
    if stream_digests_page.lane is null or stream_digests_page.from_seq is null or stream_digests_page.to_seq is null
       or stream_digests_page.from_seq < 0 or stream_digests_page.to_seq < stream_digests_page.from_seq then
        raise exception 'stream_digests_page: window [%, %) of lane % is invalid: expected 0 <= from <= to',
            stream_digests_page.from_seq, stream_digests_page.to_seq,
            coalesce(pg_catalog.quote_literal(stream_digests_page.lane), 'null')
            using errcode = '22023';
    end if;
    if stream_digests_page.max_buckets is null or stream_digests_page.max_buckets < 1 then
        raise exception 'stream_digests_page: max_buckets % is invalid: expected a positive page size', stream_digests_page.max_buckets
            using errcode = '22023';
    end if;

    -- The window's end, and whether it covers the lane's whole history (then the maintained
    -- digests answer). Decided once, before the query, so each call's plan holds one branch.
    watermark := greatest(stream_digests_page.from_seq, least(stream_digests_page.to_seq,
                   coalesce(streamseal._lane_settled_max(stream_digests_page.lane, stream_digests_page.settle), 0) + 1));
    whole_history := stream_digests_page.from_seq <= 1 and watermark > coalesce(
                   streamseal._lane_max_seq(stream_digests_page.lane), 0);

    return query
    with bounds as (
        select watermark
    ), history_streams as materialized (
        -- Whole history: the first max_buckets + 1 streams after the cursor holding a matching
        -- bucket. A page holds at most max_buckets buckets, so at most that many streams; one
        -- more tells whether more remain. O(page), not O(lane).
        select w.stream_id
        from streamseal._digest_stream_walk(stream_digests_page.lane, stream_digests_page.types,
                 stream_digests_page.after_stream, stream_digests_page.max_buckets + 1, stream_digests_page.tenants) w
        where whole_history
    ), buckets as (
        select d.stream_id, d.tenant, d.event_type, d.x0, d.x1, d.n
        from history_streams h
        cross join lateral (
            select x.stream_id, x.tenant, x.event_type, x.x0, x.x1, x.n
            from streamseal.stream_digests x
            where x.origin = stream_digests_page.lane and x.stream_id = h.stream_id collate "C"
              and (stream_digests_page.types is null or x.event_type = any (stream_digests_page.types))
              and (stream_digests_page.tenants is null or x.tenant = any (stream_digests_page.tenants))
              and (x.x0, x.x1, x.n) <> (0, 0, 0)
            -- A fence: one index lookup per stream, never a join the planner turns into a read
            -- of the lane (measured on a table not analyzed yet: a bitmap scan of all 4000).
            offset 0
        ) d
        union all
        select e.stream_id, e.tenant, e.event_type,
               pg_catalog.bit_xor(streamseal._h0(e.event_id)), pg_catalog.bit_xor(streamseal._h1(e.event_id)),
               pg_catalog.count(*)
        from streamseal.event_numbers e cross join bounds b
        where not whole_history and e.origin = stream_digests_page.lane
          and e.origin_seq >= stream_digests_page.from_seq and e.origin_seq < b.watermark
          and streamseal._counts_in_digest(e.origin_seq, e.flags)
          and (stream_digests_page.types is null or e.event_type = any (stream_digests_page.types))
          and (stream_digests_page.tenants is null or e.tenant = any (stream_digests_page.tenants))
          and (stream_digests_page.after_stream is null or e.stream_id > stream_digests_page.after_stream collate "C")
        group by e.stream_id, e.tenant, e.event_type
    ), ranked as (
        select k.*,
               pg_catalog.dense_rank() over (order by k.stream_id) as stream_rank,
               -- RANGE framing counts every row of the current stream: whole streams only.
               pg_catalog.count(*) over (order by k.stream_id range between unbounded preceding and current row) as rows_through
        from buckets k
    ), page as (
        select r.* from ranked r where r.stream_rank = 1 or r.rows_through <= stream_digests_page.max_buckets
    ), cursor as (
        select case when exists (select 1 from ranked r where r.stream_rank > (select pg_catalog.max(p.stream_rank) from page p))
                    then (select pg_catalog.max(p.stream_id) from page p) end as resume_after
    )
    select p.stream_id, p.tenant, p.event_type, p.x0, p.x1, p.n, b.watermark, c.resume_after
    from page p cross join bounds b cross join cursor c
    union all
    select null, null, null, 0::bigint, 0::bigint, 0::bigint, b.watermark, null::text
    from bounds b
    where not exists (select 1 from page)
    order by 1, 2, 3;
end
$$;

-- answer_type_digests is type_digests as answered to requester (the manifest server's
-- type-level answer): only the (tenant, event_type) pairs requester is granted (grants.sql), so
-- an audit never learns or compares another tenant's digests (invariant 11). A window holding
-- nothing granted answers the watermark-only row, as a quiet window does.
create function streamseal.answer_type_digests(requester text, lane text, from_seq bigint, to_seq bigint,
                                               settle interval default interval '0')
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint, watermark bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    return query
    with answer as materialized (
        select d.tenant, d.event_type, d.x0, d.x1, d.n, d.watermark
        from streamseal.type_digests(answer_type_digests.lane, answer_type_digests.from_seq,
                                     answer_type_digests.to_seq, answer_type_digests.settle) d
    ), granted as (
        select a.tenant, a.event_type, a.x0, a.x1, a.n, a.watermark
        from answer a
        where a.event_type is not null and streamseal._granted(answer_type_digests.requester, a.tenant, a.event_type)
    )
    select g.tenant, g.event_type, g.x0, g.x1, g.n, g.watermark from granted g
    union all
    select null, null, 0::bigint, 0::bigint, 0::bigint, (select pg_catalog.max(a.watermark) from answer a)
    where not exists (select from granted)
    order by 1, 2;
end
$$;

-- answer_stream_digests_page is stream_digests_page as answered to requester: the same page
-- and cursor, holding only the (tenant, event_type) buckets requester is granted. A page left
-- with nothing granted is the one row with a null stream_id carrying the watermark and cursor.
create function streamseal.answer_stream_digests_page(
    requester text, lane text, types text[], from_seq bigint, to_seq bigint, after_stream text, max_buckets integer,
    settle interval default interval '0', tenants text[] default null)
returns table (stream_id text, tenant text, event_type text, x0 bigint, x1 bigint, n bigint,
               watermark bigint, resume_after text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    return query
    with page as materialized (
        select p.stream_id, p.tenant, p.event_type, p.x0, p.x1, p.n, p.watermark, p.resume_after
        from streamseal.stream_digests_page(answer_stream_digests_page.lane, answer_stream_digests_page.types,
                                            answer_stream_digests_page.from_seq, answer_stream_digests_page.to_seq,
                                            answer_stream_digests_page.after_stream, answer_stream_digests_page.max_buckets,
                                            answer_stream_digests_page.settle, answer_stream_digests_page.tenants) p
    ), granted as (
        select p.* from page p
        where p.stream_id is not null
          and streamseal._granted(answer_stream_digests_page.requester, p.tenant, p.event_type)
    )
    select g.stream_id, g.tenant, g.event_type, g.x0, g.x1, g.n, g.watermark, g.resume_after from granted g
    union all
    select null, null, null, 0::bigint, 0::bigint, 0::bigint,
           (select pg_catalog.max(p.watermark) from page p), (select pg_catalog.max(p.resume_after) from page p)
    where not exists (select from granted)
    order by 1, 2, 3;
end
$$;
