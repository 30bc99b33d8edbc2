-- Comparison on the consumer: an origin's digest answer for a window (type level, then one
-- stream-level page per drill-down) held against this store's copy of the same lane and window.
-- The audit job calls these with the answer's rows as parallel arrays and feeds the differing
-- buckets to ledger_observe (ledger.sql). Deficits are repairable; identity mismatches and
-- local extras only alarm (DESIGN.md "Comparison", invariants 8, 9 and 10). A deficit of history
-- older than the lane's birth while its backfill is outstanding is 'pending_backfill'
-- (consumed_types.sql, _birth_lineage): informational, never ledgered.

-- _divergence_reason classifies one bucket from its two folds (a side that lacks the bucket is
-- (0, 0, 0)): null when they are equal, 'deficit' when this store holds fewer events,
-- 'local_extra' when it holds more, 'identity_mismatch' when the counts agree and the folds do
-- not (redelivery could never move such a fold: it alarms). Shared with ledger.sql, which holds
-- a caller's reasons to it. LANGUAGE sql without a SET clause so it inlines.
create function streamseal._divergence_reason(local_x0 bigint, local_x1 bigint, local_n bigint,
                                              origin_x0 bigint, origin_x1 bigint, origin_n bigint)
returns text
language sql
immutable
as $$
    select case
        when _divergence_reason.local_n < _divergence_reason.origin_n then 'deficit'
        when _divergence_reason.local_n > _divergence_reason.origin_n then 'local_extra'
        when _divergence_reason.local_x0 <> _divergence_reason.origin_x0
          or _divergence_reason.local_x1 <> _divergence_reason.origin_x1 then 'identity_mismatch'
    end
$$;

-- _require_comparison refuses what no comparison can read: an origin that is not another service
-- (a service keeps no copy of its own lane to compare), a window that is not 0 <= from <= to, a
-- missing or negative settle window.
create function streamseal._require_comparison(caller text, origin text, from_seq bigint, to_seq bigint,
                                               settle interval)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
    perform streamseal._require_other_origin(_require_comparison.caller, _require_comparison.origin,
        'a comparison holds another origin''s answer against this store''s copy');
    perform streamseal._require_origin_window(_require_comparison.caller, _require_comparison.origin,
                                              _require_comparison.from_seq, _require_comparison.to_seq);
    if _require_comparison.settle is null or _require_comparison.settle < interval '0' then
        raise exception '%: settle % is invalid: expected a non-negative interval',
            _require_comparison.caller, coalesce(_require_comparison.settle::text, 'null')
            using errcode = '22023';
    end if;
end
$$;

-- _answer_digest_problem names what is wrong with one digest of an origin's answer, or returns
-- null: a fold is three numbers, n >= 0, and an empty bucket folds to (0, 0, 0).
create function streamseal._answer_digest_problem(x0 bigint, x1 bigint, n bigint)
returns text
language sql
stable
as $$
    select case
        when _answer_digest_problem.x0 is null or _answer_digest_problem.x1 is null or _answer_digest_problem.n is null
          or _answer_digest_problem.n < 0
          or (_answer_digest_problem.n = 0 and (_answer_digest_problem.x0 <> 0 or _answer_digest_problem.x1 <> 0))
        then pg_catalog.format('digest (%s, %s, %s) is invalid: expected x0, x1 and n >= 0, with x0 = x1 = 0 when n = 0',
                               coalesce(_answer_digest_problem.x0::text, 'null'), coalesce(_answer_digest_problem.x1::text, 'null'),
                               coalesce(_answer_digest_problem.n::text, 'null'))
    end
$$;

-- _require_parallel refuses answer arrays that are not one-dimensional and parallel to the
-- first one. A null array reads as empty, so an answer of all-null arrays is an empty answer.
create function streamseal._require_parallel(caller text, names text[], sizes integer[], dims integer[])
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    bad record;
begin
    select a.name, a.size, a.dims into bad
    from rows from (pg_catalog.unnest(_require_parallel.names), pg_catalog.unnest(_require_parallel.sizes),
                    pg_catalog.unnest(_require_parallel.dims))
         with ordinality as a(name, size, dims, position)
    where coalesce(a.size, 0) <> coalesce(_require_parallel.sizes[1], 0) or a.dims > 1
    order by a.position
    limit 1;
    if found and bad.dims > 1 then
        raise exception '%: % has % dimensions: expected one-dimensional arrays parallel to %',
            _require_parallel.caller, bad.name, bad.dims, _require_parallel.names[1]
            using errcode = '22023';
    end if;
    if found then
        raise exception '%: % has % elements for % %: expected one-dimensional arrays parallel to %',
            _require_parallel.caller, bad.name, coalesce(bad.size::text, 'null'),
            coalesce(_require_parallel.sizes[1], 0), _require_parallel.names[1], _require_parallel.names[1]
            using errcode = '22023';
    end if;
end
$$;

-- compare_type_digests holds an origin's type-level answer for the window [from_seq, to_seq)
-- (parallel arrays, one element per (tenant, event_type); to_seq is the answer's watermark)
-- against this store's fold of the same lane over exactly [from_seq, to_seq), and returns the
-- buckets that differ, classified by _divergence_reason; a side that lacks a bucket is (0, 0, 0).
-- subscribed_tenants_only (the auditor passes true) drops the buckets of tenants this service
-- is not subscribed to (subscriptions.sql), on both sides.
-- consumed_types (null: every type; empty: none) restricts both sides: a consumer compares only
-- what it consumes. A type-level difference of any kind means "drill down" (compare_stream_digests);
-- the reason is informational.
--
-- The local fold is type_digests(origin, from_seq, to_seq) (sealed epochs served, fringes live)
-- plus a live fold of [its watermark, to_seq): type_digests caps at the local settled max, and
-- the comparison must cover the origin's whole window or a fresh local arrival would read as
-- missing. settle therefore narrows nothing here: a type-level fold cannot tell an in-flight
-- arrival from a loss, so every difference is returned and the stream level marks the in-flight
-- buckets skipped. It is validated and accepted so both levels take the same options.
-- The answer's quiet-window row (null tenant and event_type, digest (0, 0, 0)) is ignored.
create function streamseal.compare_type_digests(
    origin text, from_seq bigint, to_seq bigint, tenants text[], event_types text[],
    x0s bigint[], x1s bigint[], ns bigint[], consumed_types text[] default null,
    settle interval default interval '0', subscribed_tenants_only boolean default false)
returns table (tenant text, event_type text, local_x0 bigint, local_x1 bigint, local_n bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, reason text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: the window bounds must be visible so the live folds stay on the
-- (origin, origin_seq) index range.
set plan_cache_mode = force_custom_plan
as $$
declare
    problem text;
    bad record;
begin
    -- GUARD: an answer is read whole or refused whole.
    perform streamseal._require_comparison('compare_type_digests', compare_type_digests.origin,
        compare_type_digests.from_seq, compare_type_digests.to_seq, compare_type_digests.settle);
    -- An empty list consumes nothing: nothing is compared.
    if pg_catalog.cardinality(compare_type_digests.consumed_types) > 0 then
        problem := streamseal._list_problem(compare_type_digests.consumed_types);
        if problem is not null then
            raise exception 'compare_type_digests: consumed_types must name event types (null: every type): %', problem
                using errcode = '22023';
        end if;
    end if;
    perform streamseal._require_parallel('compare_type_digests',
        array['tenants', 'event_types', 'x0s', 'x1s', 'ns'],
        array[pg_catalog.cardinality(compare_type_digests.tenants), pg_catalog.cardinality(compare_type_digests.event_types),
              pg_catalog.cardinality(compare_type_digests.x0s), pg_catalog.cardinality(compare_type_digests.x1s),
              pg_catalog.cardinality(compare_type_digests.ns)],
        array[pg_catalog.array_ndims(compare_type_digests.tenants), pg_catalog.array_ndims(compare_type_digests.event_types),
              pg_catalog.array_ndims(compare_type_digests.x0s), pg_catalog.array_ndims(compare_type_digests.x1s),
              pg_catalog.array_ndims(compare_type_digests.ns)]);
    select c.position, c.problem into bad
    from (
        select a.position, case
            -- The quiet-window row carries only the watermark.
            when a.tenant is null and a.event_type is null
             and coalesce(a.x0, 0) = 0 and coalesce(a.x1, 0) = 0 and coalesce(a.n, 0) = 0 then null
            when a.tenant is null then 'tenant null is invalid: expected a name ('''' for a single-tenant service)'
            when a.event_type is null or a.event_type = '' then
                pg_catalog.format('event_type %s is invalid: expected a non-empty name',
                                  coalesce(pg_catalog.quote_literal(a.event_type), 'null'))
            else streamseal._answer_digest_problem(a.x0, a.x1, a.n)
        end as problem
        from rows from (pg_catalog.unnest(compare_type_digests.tenants), pg_catalog.unnest(compare_type_digests.event_types),
                        pg_catalog.unnest(compare_type_digests.x0s), pg_catalog.unnest(compare_type_digests.x1s),
                        pg_catalog.unnest(compare_type_digests.ns))
             with ordinality as a(tenant, event_type, x0, x1, n, position)
    ) c
    where c.problem is not null
    order by c.position
    limit 1;
    if found then
        raise exception 'compare_type_digests: row #% of the answer of origin "%": %',
            bad.position, compare_type_digests.origin, bad.problem
            using errcode = '22023';
    end if;
    select a.tenant, a.event_type into bad
    from rows from (pg_catalog.unnest(compare_type_digests.tenants), pg_catalog.unnest(compare_type_digests.event_types))
         as a(tenant, event_type)
    where a.event_type is not null
    group by a.tenant, a.event_type
    having pg_catalog.count(*) > 1
    limit 1;
    if found then
        raise exception 'compare_type_digests: bucket (tenant %, event_type %) appears more than once in the answer of origin "%"',
            pg_catalog.quote_literal(bad.tenant), pg_catalog.quote_literal(bad.event_type), compare_type_digests.origin
            using errcode = '22023';
    end if;

    return query
    with answer as (
        select a.tenant, a.event_type, a.x0, a.x1, a.n
        from rows from (pg_catalog.unnest(compare_type_digests.tenants),
                        pg_catalog.unnest(compare_type_digests.event_types),
                        pg_catalog.unnest(compare_type_digests.x0s), pg_catalog.unnest(compare_type_digests.x1s),
                        pg_catalog.unnest(compare_type_digests.ns)) as a(tenant, event_type, x0, x1, n)
        where a.event_type is not null
          and (compare_type_digests.consumed_types is null or a.event_type = any (compare_type_digests.consumed_types))
    ), served as (
        select d.tenant, d.event_type, d.x0, d.x1, d.n, d.watermark
        from streamseal.type_digests(compare_type_digests.origin, compare_type_digests.from_seq, compare_type_digests.to_seq) d
    ), parts as (
        select s.tenant, s.event_type, s.x0, s.x1, s.n
        from served s
        where s.event_type is not null
        union all
        -- Above the local settled max: fresh arrivals still belong to the origin's window.
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from (select pg_catalog.max(s.watermark) as watermark from served s) w
        cross join lateral streamseal._epoch_fold(compare_type_digests.origin, w.watermark, compare_type_digests.to_seq) f
    ), mine as (
        select p.tenant, p.event_type, pg_catalog.bit_xor(p.x0) as x0, pg_catalog.bit_xor(p.x1) as x1,
               pg_catalog.sum(p.n)::bigint as n
        from parts p
        where compare_type_digests.consumed_types is null or p.event_type = any (compare_type_digests.consumed_types)
        group by p.tenant, p.event_type
    ), paired as (
        select coalesce(m.tenant, a.tenant) as tenant, coalesce(m.event_type, a.event_type) as event_type,
               coalesce(m.x0, 0) as local_x0, coalesce(m.x1, 0) as local_x1, coalesce(m.n, 0) as local_n,
               coalesce(a.x0, 0) as origin_x0, coalesce(a.x1, 0) as origin_x1, coalesce(a.n, 0) as origin_n
        from mine m
        full join answer a on a.tenant = m.tenant and a.event_type = m.event_type
    )
    select p.tenant, p.event_type, p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n,
           streamseal._birth_lineage(compare_type_digests.origin, p.tenant, p.event_type,
               streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n))
    from paired p
    where streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n) is not null
      -- A tenant this service does not consume is never compared, so never repaired into it
      -- (invariant 11), even when the origin grants and answers it.
      and (not compare_type_digests.subscribed_tenants_only
           or streamseal.subscribed(compare_type_digests.origin, p.tenant, p.event_type))
    order by p.tenant, p.event_type;
end
$$;

-- compare_stream_digests holds one stream-level page of an origin's answer (the shape of
-- stream_digests_page: parallel arrays, one element per (stream_id, tenant, event_type)) for
-- the window [from_seq, to_seq) against this store's fold per (stream_id, tenant, event_type) of
-- the same lane and window, for the event types the page lists, over the stream range the page
-- covers: (covered_after, covered_through] (null covered_after: from the first stream; null
-- covered_through: to the last). Every stream in the page must lie in that range. Returns the
-- buckets that differ, classified like compare_type_digests; a local bucket in the range that
-- the page does not report is 'local_extra' (invariant 10: reported, never deleted).
--
-- skipped = true marks a differing bucket whose local stream_digests row moved within settle
-- (updated_at >= now() - settle, settle > 0): in flight, not news yet; the caller does not
-- ledger it. A zero settle window holds nothing, so settle '0' skips nothing.
--
-- The listed types are the page's event types. A row with a null stream_id is not a bucket: the
-- empty-page row (every other field null or 0) is ignored, and a row with only an event_type
-- set lists that type with no buckets, so a drill-down into a type the origin holds nothing of
-- in the range still finds this store's extras.
-- tenants_only (null: every tenant) narrows the local side to those tenants, for a page asked
-- for those tenants alone (a tenant fold's drill-down, tenant_folds.sql).
-- The local fold reads the store's events with origin_seq in [from_seq, to_seq) (O(window));
-- a window covering the lane's whole history (from_seq <= 1, to_seq above its highest
-- origin_seq) reads the maintained stream_digests instead, like stream_digests_page.
create function streamseal.compare_stream_digests(
    origin text, from_seq bigint, to_seq bigint, stream_ids text[], tenants text[], event_types text[],
    x0s bigint[], x1s bigint[], ns bigint[], settle interval default interval '0',
    covered_after text default null, covered_through text default null,
    subscribed_tenants_only boolean default false, tenants_only text[] default null)
returns table (stream_id text, tenant text, event_type text, local_x0 bigint, local_x1 bigint, local_n bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, reason text, skipped boolean)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: the window bounds must be visible so the fold stays on the
-- (origin, origin_seq) index range.
set plan_cache_mode = force_custom_plan
as $$
declare
    listed text[];
    bad record;
begin
    -- GUARD: a page is read whole or refused whole.
    perform streamseal._require_comparison('compare_stream_digests', compare_stream_digests.origin,
        compare_stream_digests.from_seq, compare_stream_digests.to_seq, compare_stream_digests.settle);
    -- Stream ranges are in byte order (collate "C") on both sides of the wire, whatever this
    -- database's default collation (migration 045 gives the stream_id columns that order; a
    -- parameter or an answer's array carries the default, so comparisons between them say it).
    if compare_stream_digests.covered_after >= compare_stream_digests.covered_through collate "C" then
        raise exception 'compare_stream_digests: stream range (%, %] is invalid: expected covered_after < covered_through (null: unbounded)',
            pg_catalog.quote_literal(compare_stream_digests.covered_after), pg_catalog.quote_literal(compare_stream_digests.covered_through)
            using errcode = '22023';
    end if;
    perform streamseal._require_parallel('compare_stream_digests',
        array['stream_ids', 'tenants', 'event_types', 'x0s', 'x1s', 'ns'],
        array[pg_catalog.cardinality(compare_stream_digests.stream_ids), pg_catalog.cardinality(compare_stream_digests.tenants),
              pg_catalog.cardinality(compare_stream_digests.event_types), pg_catalog.cardinality(compare_stream_digests.x0s),
              pg_catalog.cardinality(compare_stream_digests.x1s), pg_catalog.cardinality(compare_stream_digests.ns)],
        array[pg_catalog.array_ndims(compare_stream_digests.stream_ids), pg_catalog.array_ndims(compare_stream_digests.tenants),
              pg_catalog.array_ndims(compare_stream_digests.event_types), pg_catalog.array_ndims(compare_stream_digests.x0s),
              pg_catalog.array_ndims(compare_stream_digests.x1s), pg_catalog.array_ndims(compare_stream_digests.ns)]);
    select c.position, c.problem into bad
    from (
        select a.position, case
            when a.event_type = '' then 'event_type '''' is invalid: expected a non-empty name'
            when a.stream_id is null then case
                when a.tenant is not null or coalesce(a.x0, 0) <> 0 or coalesce(a.x1, 0) <> 0 or coalesce(a.n, 0) <> 0 then
                    'stream_id null is invalid: expected a stream (a row without one only ends an empty page or lists an event_type)'
                end
            when a.stream_id = '' then 'stream_id '''' is invalid: expected a non-empty stream id'
            when a.tenant is null then 'tenant null is invalid: expected a name ('''' for a single-tenant service)'
            when a.event_type is null then 'event_type null is invalid: expected a non-empty name'
            when a.stream_id collate "C" <= compare_stream_digests.covered_after
              or a.stream_id collate "C" > compare_stream_digests.covered_through then
                pg_catalog.format('stream_id %L lies outside the covered stream range (%s, %s]', a.stream_id,
                                  coalesce(pg_catalog.quote_literal(compare_stream_digests.covered_after), 'null'),
                                  coalesce(pg_catalog.quote_literal(compare_stream_digests.covered_through), 'null'))
            else streamseal._answer_digest_problem(a.x0, a.x1, a.n)
        end as problem
        from rows from (pg_catalog.unnest(compare_stream_digests.stream_ids),
                        pg_catalog.unnest(compare_stream_digests.tenants),
                        pg_catalog.unnest(compare_stream_digests.event_types),
                        pg_catalog.unnest(compare_stream_digests.x0s), pg_catalog.unnest(compare_stream_digests.x1s),
                        pg_catalog.unnest(compare_stream_digests.ns))
             with ordinality as a(stream_id, tenant, event_type, x0, x1, n, position)
    ) c
    where c.problem is not null
    order by c.position
    limit 1;
    if found then
        raise exception 'compare_stream_digests: row #% of the page of origin "%": %',
            bad.position, compare_stream_digests.origin, bad.problem
            using errcode = '22023';
    end if;
    select a.stream_id, a.tenant, a.event_type into bad
    from rows from (pg_catalog.unnest(compare_stream_digests.stream_ids),
                    pg_catalog.unnest(compare_stream_digests.tenants),
                    pg_catalog.unnest(compare_stream_digests.event_types))
         as a(stream_id, tenant, event_type)
    where a.stream_id is not null
    group by a.stream_id, a.tenant, a.event_type
    having pg_catalog.count(*) > 1
    limit 1;
    if found then
        raise exception 'compare_stream_digests: bucket (stream_id %, tenant %, event_type %) appears more than once in the page of origin "%"',
            pg_catalog.quote_literal(bad.stream_id), pg_catalog.quote_literal(bad.tenant), pg_catalog.quote_literal(bad.event_type),
            compare_stream_digests.origin
            using errcode = '22023';
    end if;

    listed := array(select distinct t.event_type
                    from pg_catalog.unnest(compare_stream_digests.event_types) as t(event_type)
                    where t.event_type is not null);

    return query
    with answer as (
        -- In byte order, as the page was built and as this store's stream_id columns compare.
        select a.stream_id collate "C" as stream_id, a.tenant, a.event_type, a.x0, a.x1, a.n
        from rows from (pg_catalog.unnest(compare_stream_digests.stream_ids),
                        pg_catalog.unnest(compare_stream_digests.tenants),
                        pg_catalog.unnest(compare_stream_digests.event_types),
                        pg_catalog.unnest(compare_stream_digests.x0s), pg_catalog.unnest(compare_stream_digests.x1s),
                        pg_catalog.unnest(compare_stream_digests.ns))
             as a(stream_id, tenant, event_type, x0, x1, n)
        where a.stream_id is not null
    ), bounds as (
        select compare_stream_digests.from_seq <= 1 and compare_stream_digests.to_seq > coalesce(
                   streamseal._lane_max_seq(compare_stream_digests.origin), 0)
               as whole_history
    ), mine as (
        -- The whole_history tests are uncorrelated subqueries on purpose (as in type_digests):
        -- Postgres evaluates them once as a gate on the branch. As a join filter against bounds,
        -- a planner that believed the lane tiny (events not analyzed since a bulk load) read the
        -- whole lane and tested each row: 250-650 ms for a 500-bucket page of a 1M-event lane
        -- whose answer comes from stream_digests in 4 ms.
        select d.stream_id, d.tenant, d.event_type, d.x0, d.x1, d.n
        from streamseal.stream_digests d
        where (select b.whole_history from bounds b) and d.origin = compare_stream_digests.origin
          and d.event_type = any (listed)
          and (compare_stream_digests.tenants_only is null or d.tenant = any (compare_stream_digests.tenants_only))
          and (compare_stream_digests.covered_after is null or d.stream_id > compare_stream_digests.covered_after collate "C")
          and (compare_stream_digests.covered_through is null or d.stream_id <= compare_stream_digests.covered_through collate "C")
          and (d.x0, d.x1, d.n) <> (0, 0, 0)
        union all
        select e.stream_id, e.tenant, e.event_type,
               pg_catalog.bit_xor(streamseal._h0(e.event_id)), pg_catalog.bit_xor(streamseal._h1(e.event_id)),
               pg_catalog.count(*)
        from streamseal.event_numbers e
        where (select not b.whole_history from bounds b) and e.origin = compare_stream_digests.origin
          and e.origin_seq >= compare_stream_digests.from_seq and e.origin_seq < compare_stream_digests.to_seq
          and streamseal._counts_in_digest(e.origin_seq, e.flags)
          and e.event_type = any (listed)
          and (compare_stream_digests.tenants_only is null or e.tenant = any (compare_stream_digests.tenants_only))
          and (compare_stream_digests.covered_after is null or e.stream_id > compare_stream_digests.covered_after collate "C")
          and (compare_stream_digests.covered_through is null or e.stream_id <= compare_stream_digests.covered_through collate "C")
        group by e.stream_id, e.tenant, e.event_type
    ), paired as (
        select coalesce(m.stream_id, a.stream_id) as stream_id, coalesce(m.tenant, a.tenant) as tenant,
               coalesce(m.event_type, a.event_type) as event_type,
               coalesce(m.x0, 0) as local_x0, coalesce(m.x1, 0) as local_x1, coalesce(m.n, 0) as local_n,
               coalesce(a.x0, 0) as origin_x0, coalesce(a.x1, 0) as origin_x1, coalesce(a.n, 0) as origin_n
        from mine m
        full join answer a on a.stream_id = m.stream_id and a.tenant = m.tenant and a.event_type = m.event_type
    )
    select p.stream_id, p.tenant, p.event_type, p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n,
           streamseal._birth_lineage(compare_stream_digests.origin, p.tenant, p.event_type,
               streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n)),
           coalesce(compare_stream_digests.settle > interval '0'
                    and d.updated_at >= pg_catalog.now() - compare_stream_digests.settle, false)
    from paired p
    left join streamseal.stream_digests d
        on d.origin = compare_stream_digests.origin and d.tenant = p.tenant
       and d.event_type = p.event_type and d.stream_id = p.stream_id
    where streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n) is not null
      -- As in compare_type_digests: only tenants this service consumes (invariant 11).
      and (not compare_stream_digests.subscribed_tenants_only
           or streamseal.subscribed(compare_stream_digests.origin, p.tenant, p.event_type))
    order by p.stream_id, p.tenant, p.event_type;
end
$$;
