-- Range folds: the audit's drill into a mismatched event type by bisecting the tenant key space
-- (issue 21 item 1, invariant 8). XOR digests compose, so the fold of any set of tenants is one
-- digest: the auditor asks the origin for the folds of K sub-ranges of a range [key_lo, key_hi)
-- of tenant keys (answer_range_folds), compares them with its own folds of the same sub-ranges
-- (compare_range_folds) and recurses only into the sub-ranges that differ, until one holds few
-- enough (tenant, type) pairs to list (answer_range_tenant_digests, compare_range_tenant_digests).
-- One damaged tenant among N costs O(K log_K N) digests on the wire, wherever its name sorts.
-- Scope and grants as in tenant_folds.sql: both sides fold the scope the request names, the
-- origin only the pairs of it the requester is granted (invariant 11).

-- tenant_key is a tenant's place in the key space [0, 2^62): 62 bits of its hash, so sub-ranges
-- split tenants evenly whatever their names. Migration 026 indexes sealed_prefix and
-- digest_epochs on this exact expression. LANGUAGE sql without a SET clause so it inlines (and
-- the planner matches those indexes).
create function streamseal.tenant_key(tenant text)
returns bigint
language sql
immutable
parallel safe
as $$ select pg_catalog.hashtextextended(tenant_key.tenant, 0) & 4611686018427387903 $$;

-- tenant_key_end is the exclusive end of the tenant key space, 2^62: [0, tenant_key_end()) holds
-- every tenant.
create function streamseal.tenant_key_end()
returns bigint
language sql
immutable
parallel safe
as $$ select 4611686018427387904::bigint $$;

-- range_fold_max_parts is the most sub-ranges one range-fold request may ask for.
create function streamseal.range_fold_max_parts()
returns integer
language sql
immutable
parallel safe
as $$ select 64 $$;

-- _require_key_range refuses a tenant key range that is not 0 <= key_lo < key_hi <= 2^62, or a
-- split into parts outside 2 .. range_fold_max_parts() (parts null: no split asked).
create function streamseal._require_key_range(caller text, key_lo bigint, key_hi bigint, parts integer)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if _require_key_range.key_lo is null or _require_key_range.key_hi is null or _require_key_range.key_lo < 0
       or _require_key_range.key_hi > streamseal.tenant_key_end() or _require_key_range.key_lo >= _require_key_range.key_hi then
        raise exception '%: tenant key range [%, %) is invalid: expected 0 <= lo < hi <= %', _require_key_range.caller,
            coalesce(_require_key_range.key_lo::text, 'null'), coalesce(_require_key_range.key_hi::text, 'null'),
            streamseal.tenant_key_end()
            using errcode = '22023';
    end if;
    if _require_key_range.parts is not null
       and (_require_key_range.parts < 2 or _require_key_range.parts > streamseal.range_fold_max_parts()) then
        raise exception '%: parts % is invalid: expected 2 to % sub-ranges', _require_key_range.caller,
            _require_key_range.parts, streamseal.range_fold_max_parts()
            using errcode = '22023';
    end if;
end
$$;

-- _key_parts returns the parts sub-ranges of [key_lo, key_hi): part i is [part_lo, part_hi) with
-- part_lo = key_lo + floor((key_hi - key_lo) * i / parts) (empty parts included when the range
-- is narrower than parts).
create function streamseal._key_parts(key_lo bigint, key_hi bigint, parts integer)
returns table (part integer, part_lo bigint, part_hi bigint)
language sql
immutable
as $$
    select i, _key_parts.key_lo + pg_catalog.div((_key_parts.key_hi - _key_parts.key_lo)::numeric * i, _key_parts.parts)::bigint,
           _key_parts.key_lo + pg_catalog.div((_key_parts.key_hi - _key_parts.key_lo)::numeric * (i + 1), _key_parts.parts)::bigint
    from pg_catalog.generate_series(0, _key_parts.parts - 1) i
$$;

-- _key_part is the part of [key_lo, key_hi) split into parts (as _key_parts) that holds key:
-- the number of part starts at or below key, less one.
create function streamseal._key_part(key bigint, key_lo bigint, key_hi bigint, parts integer)
returns integer
language sql
immutable
as $$
    select (pg_catalog.ceil((_key_part.key - _key_part.key_lo + 1)::numeric * _key_part.parts
                            / (_key_part.key_hi - _key_part.key_lo)) - 1)::integer
$$;

-- _type_digests_in_range is type_digests (answers.sql) of the tenants whose key lies in
-- [key_lo, key_hi), of event_types only (null: every type): the same parts (sealed prefix, closed epochs wholly inside the window, live
-- fringes), the sealed ones read by the tenant-key indexes, so its cost is the pairs of the range
-- plus the open window, not the lane's pairs. Same watermark and quiet-window row.
create function streamseal._type_digests_in_range(lane text, from_seq bigint, to_seq bigint, settle interval,
                                                   key_lo bigint, key_hi bigint, event_types text[] default null)
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint, watermark bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
begin
    if _type_digests_in_range.lane is null or _type_digests_in_range.from_seq is null or _type_digests_in_range.to_seq is null
       or _type_digests_in_range.from_seq < 0 or _type_digests_in_range.to_seq < _type_digests_in_range.from_seq then
        raise exception 'type_digests: window [%, %) of lane % is invalid: expected 0 <= from <= to',
            _type_digests_in_range.from_seq, _type_digests_in_range.to_seq,
            coalesce(pg_catalog.quote_literal(_type_digests_in_range.lane), 'null')
            using errcode = '22023';
    end if;
    perform streamseal._require_key_range('type_digests', _type_digests_in_range.key_lo, _type_digests_in_range.key_hi, null);

    return query
    with bounds as (
        select greatest(_type_digests_in_range.from_seq, least(_type_digests_in_range.to_seq,
                   coalesce(streamseal._lane_settled_max(_type_digests_in_range.lane, _type_digests_in_range.settle), 0) + 1)) as watermark
    ), sealed_span as (
        select s.width, s.first_full, s.end_full, s.first_full = 0 and s.end_full = s.closed_through as whole_prefix
        from (
            select le.width, le.closed_through,
                   (case when _type_digests_in_range.from_seq <= 1 then 0 else _type_digests_in_range.from_seq end + le.width - 1) / le.width as first_full,
                   least(b.watermark / le.width, le.closed_through) as end_full
            from streamseal.lane_epochs le cross join bounds b
            where le.origin = _type_digests_in_range.lane
        ) s
        where s.first_full < s.end_full
    ), parts as (
        select p.tenant, p.event_type, p.x0, p.x1, p.n
        from streamseal.sealed_prefix p
        where p.origin = _type_digests_in_range.lane and (select s.whole_prefix from sealed_span s)
          and streamseal.tenant_key(p.tenant) >= _type_digests_in_range.key_lo
          and streamseal.tenant_key(p.tenant) < _type_digests_in_range.key_hi
          and (_type_digests_in_range.event_types is null or p.event_type = any (_type_digests_in_range.event_types))
        union all
        select d.tenant, d.event_type, d.x0, d.x1, d.n
        from streamseal.digest_epochs d cross join sealed_span s
        where d.origin = _type_digests_in_range.lane and (select not s2.whole_prefix from sealed_span s2)
          and streamseal.tenant_key(d.tenant) >= _type_digests_in_range.key_lo
          and streamseal.tenant_key(d.tenant) < _type_digests_in_range.key_hi
          and (_type_digests_in_range.event_types is null or d.event_type = any (_type_digests_in_range.event_types))
          and d.epoch >= s.first_full and d.epoch < s.end_full
        union all
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from bounds b
        left join sealed_span s on true
        cross join lateral streamseal._epoch_fold(_type_digests_in_range.lane, _type_digests_in_range.from_seq,
                                                  coalesce(s.first_full * s.width, b.watermark)) f
        where streamseal.tenant_key(f.tenant) >= _type_digests_in_range.key_lo
          and streamseal.tenant_key(f.tenant) < _type_digests_in_range.key_hi
          and (_type_digests_in_range.event_types is null or f.event_type = any (_type_digests_in_range.event_types))
        union all
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from bounds b
        cross join sealed_span s
        cross join lateral streamseal._epoch_fold(_type_digests_in_range.lane, s.end_full * s.width, b.watermark) f
        where streamseal.tenant_key(f.tenant) >= _type_digests_in_range.key_lo
          and streamseal.tenant_key(f.tenant) < _type_digests_in_range.key_hi
          and (_type_digests_in_range.event_types is null or f.event_type = any (_type_digests_in_range.event_types))
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

-- answer_range_folds is the origin's drill-down step: [key_lo, key_hi) split into parts
-- sub-ranges (_key_parts), and per (part, event type of the scope) the fold over the tenants of
-- that part requester is granted, of lane over [from_seq, watermark), with the number of
-- (tenant, type) pairs it folds (so the auditor knows when a part is small enough to list).
-- Parts and types holding nothing are left out; an answer holding nothing is one row with a null
-- event_type carrying the watermark.
create function streamseal.answer_range_folds(requester text, lane text, from_seq bigint, to_seq bigint,
                                              scope_types text[], scope_tenants text[],
                                              key_lo bigint, key_hi bigint, parts integer,
                                              settle interval default interval '0')
returns table (part integer, part_lo bigint, part_hi bigint, event_type text, x0 bigint, x1 bigint, n bigint,
               pairs bigint, watermark bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    perform streamseal._require_tenant_scope('answer_range_folds', answer_range_folds.scope_types, answer_range_folds.scope_tenants);
    perform streamseal._require_key_range('answer_range_folds', answer_range_folds.key_lo, answer_range_folds.key_hi,
                                          coalesce(answer_range_folds.parts, 0));
    return query
    with answer as materialized (
        select p.tenant, p.event_type, p.x0, p.x1, p.n, p.watermark
        from streamseal._answer_scoped_pairs(answer_range_folds.requester, answer_range_folds.lane, answer_range_folds.from_seq,
                                             answer_range_folds.to_seq, answer_range_folds.scope_types, answer_range_folds.scope_tenants,
                                             answer_range_folds.settle, answer_range_folds.key_lo, answer_range_folds.key_hi) p
    ), folded as (
        select streamseal._key_part(streamseal.tenant_key(a.tenant), answer_range_folds.key_lo, answer_range_folds.key_hi,
                                    answer_range_folds.parts) as part,
               a.event_type, pg_catalog.bit_xor(a.x0) as x0, pg_catalog.bit_xor(a.x1) as x1, pg_catalog.sum(a.n)::bigint as n,
               pg_catalog.count(*) as pairs
        from answer a
        where a.event_type is not null
        group by 1, 2
    ), w as (
        select pg_catalog.max(a.watermark) as watermark from answer a
    )
    select f.part, k.part_lo, k.part_hi, f.event_type, f.x0, f.x1, f.n, f.pairs, w.watermark
    from folded f
    join streamseal._key_parts(answer_range_folds.key_lo, answer_range_folds.key_hi, answer_range_folds.parts) k on k.part = f.part
    cross join w
    union all
    select null, null, null, null, 0::bigint, 0::bigint, 0::bigint, 0::bigint, w.watermark
    from w
    where not exists (select from folded)
    order by 1, 4;
end
$$;

-- answer_range_tenant_digests is the drill-down's last step: per (tenant, event_type) of the
-- scope requester is granted whose tenant key lies in [key_lo, key_hi), the fold of lane over
-- [from_seq, watermark), in (tenant, type) order. The auditor asks it only for a range whose fold
-- counted few pairs; an empty answer is one row with a null tenant carrying the watermark.
create function streamseal.answer_range_tenant_digests(requester text, lane text, from_seq bigint, to_seq bigint,
                                                       scope_types text[], scope_tenants text[],
                                                       key_lo bigint, key_hi bigint,
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
    perform streamseal._require_tenant_scope('answer_range_tenant_digests', answer_range_tenant_digests.scope_types,
                                             answer_range_tenant_digests.scope_tenants);
    perform streamseal._require_key_range('answer_range_tenant_digests', answer_range_tenant_digests.key_lo,
                                          answer_range_tenant_digests.key_hi, null);
    return query
    with answer as materialized (
        select p.tenant, p.event_type, p.x0, p.x1, p.n, p.watermark
        from streamseal._answer_scoped_pairs(answer_range_tenant_digests.requester, answer_range_tenant_digests.lane,
                 answer_range_tenant_digests.from_seq, answer_range_tenant_digests.to_seq, answer_range_tenant_digests.scope_types,
                 answer_range_tenant_digests.scope_tenants, answer_range_tenant_digests.settle,
                 answer_range_tenant_digests.key_lo, answer_range_tenant_digests.key_hi) p
    ), w as (
        select pg_catalog.max(a.watermark) as watermark from answer a
    )
    select a.tenant, a.event_type, a.x0, a.x1, a.n, w.watermark
    from answer a cross join w
    where a.event_type is not null
    union all
    select null, null, 0::bigint, 0::bigint, 0::bigint, w.watermark
    from w
    where not exists (select from answer a where a.event_type is not null)
    order by 1, 2;
end
$$;

-- _local_range_pairs is _local_pair_folds (tenant_folds.sql) over the tenants of
-- [key_lo, key_hi): this consumer's fold of its copy of origin's lane over exactly
-- [from_seq, to_seq), per (tenant, event_type) of the scope.
create function streamseal._local_range_pairs(origin text, from_seq bigint, to_seq bigint,
                                              scope_types text[], scope_tenants text[], key_lo bigint, key_hi bigint)
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint)
language sql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
    with served as materialized (
        select d.tenant, d.event_type, d.x0, d.x1, d.n, d.watermark
        from streamseal._type_digests_in_range(_local_range_pairs.origin, _local_range_pairs.from_seq, _local_range_pairs.to_seq,
                                               interval '0', _local_range_pairs.key_lo, _local_range_pairs.key_hi,
                                               _local_range_pairs.scope_types) d
    ), parts as (
        select s.tenant, s.event_type, s.x0, s.x1, s.n from served s where s.event_type is not null
        union all
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from (select pg_catalog.max(s.watermark) as watermark from served s) w
        cross join lateral streamseal._epoch_fold(_local_range_pairs.origin, w.watermark, _local_range_pairs.to_seq) f
        where streamseal.tenant_key(f.tenant) >= _local_range_pairs.key_lo
          and streamseal.tenant_key(f.tenant) < _local_range_pairs.key_hi
          and f.event_type = any (_local_range_pairs.scope_types)
    ), scope as materialized (
        select s.event_type, s.tenant
        from rows from (pg_catalog.unnest(_local_range_pairs.scope_types), pg_catalog.unnest(_local_range_pairs.scope_tenants))
             as s(event_type, tenant)
    )
    select p.tenant, p.event_type, pg_catalog.bit_xor(p.x0), pg_catalog.bit_xor(p.x1), pg_catalog.sum(p.n)::bigint
    from parts p
    where p.event_type in (select s.event_type from scope s where s.tenant is null)
       or (p.tenant, p.event_type) in (select s.tenant, s.event_type from scope s where s.tenant is not null)
    group by p.tenant, p.event_type
    having pg_catalog.bit_xor(p.x0) <> 0 or pg_catalog.bit_xor(p.x1) <> 0 or pg_catalog.sum(p.n) <> 0
$$;

-- compare_range_folds holds an origin's answer_range_folds for [from_seq, to_seq) (to_seq: its
-- watermark), key range [key_lo, key_hi) and parts, as parallel arrays (one element per
-- (part, event_type)), against this store's folds of the same parts over the same scope, and
-- returns the (part, event_type) pairs that differ with both sides' folds and pair counts,
-- classified by _divergence_reason. A row naming a part outside 0 .. parts - 1, a type outside
-- the scope, a bad digest, a pair count outside 0 .. n, or a duplicate refuses the answer whole
-- (22023), as does a bad key range or split.
create function streamseal.compare_range_folds(origin text, from_seq bigint, to_seq bigint,
                                               key_lo bigint, key_hi bigint, parts integer,
                                               part_numbers integer[], event_types text[], x0s bigint[], x1s bigint[], ns bigint[],
                                               pair_counts bigint[], scope_types text[], scope_tenants text[])
returns table (part integer, part_lo bigint, part_hi bigint, event_type text,
               local_x0 bigint, local_x1 bigint, local_n bigint, local_pairs bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, origin_pairs bigint, reason text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
declare
    bad record;
begin
    -- GUARD: an answer is read whole or refused whole.
    perform streamseal._require_comparison('compare_range_folds', compare_range_folds.origin,
        compare_range_folds.from_seq, compare_range_folds.to_seq, interval '0');
    perform streamseal._require_key_range('compare_range_folds', compare_range_folds.key_lo, compare_range_folds.key_hi,
                                          coalesce(compare_range_folds.parts, 0));
    perform streamseal._require_tenant_scope('compare_range_folds', compare_range_folds.scope_types, compare_range_folds.scope_tenants);
    perform streamseal._require_parallel('compare_range_folds', array['part_numbers', 'event_types', 'x0s', 'x1s', 'ns', 'pair_counts'],
        array[pg_catalog.cardinality(compare_range_folds.part_numbers), pg_catalog.cardinality(compare_range_folds.event_types),
              pg_catalog.cardinality(compare_range_folds.x0s), pg_catalog.cardinality(compare_range_folds.x1s),
              pg_catalog.cardinality(compare_range_folds.ns), pg_catalog.cardinality(compare_range_folds.pair_counts)],
        array[pg_catalog.array_ndims(compare_range_folds.part_numbers), pg_catalog.array_ndims(compare_range_folds.event_types),
              pg_catalog.array_ndims(compare_range_folds.x0s), pg_catalog.array_ndims(compare_range_folds.x1s),
              pg_catalog.array_ndims(compare_range_folds.ns), pg_catalog.array_ndims(compare_range_folds.pair_counts)]);
    select c.position, c.problem into bad
    from (
        select a.position, case
            when a.event_type is null or a.event_type = '' then 'event_type null or empty is invalid: expected a name'
            when not exists (select from pg_catalog.unnest(compare_range_folds.scope_types) s(t) where s.t = a.event_type) then
                pg_catalog.format('event_type %L lies outside the scope the request named', a.event_type)
            when a.part is null or a.part < 0 or a.part >= compare_range_folds.parts then
                pg_catalog.format('part %s is invalid: expected 0 to %s', coalesce(a.part::text, 'null'), compare_range_folds.parts - 1)
            when streamseal._answer_digest_problem(a.x0, a.x1, a.n) is not null then streamseal._answer_digest_problem(a.x0, a.x1, a.n)
            when a.pairs is null or a.pairs < 0 or a.pairs > a.n or (a.pairs = 0) <> (a.n = 0) then
                pg_catalog.format('pair count %s is invalid for %s events: expected 1 to n pairs (0 when n = 0)',
                                  coalesce(a.pairs::text, 'null'), a.n)
            end as problem
        from rows from (pg_catalog.unnest(compare_range_folds.part_numbers), pg_catalog.unnest(compare_range_folds.event_types),
                        pg_catalog.unnest(compare_range_folds.x0s), pg_catalog.unnest(compare_range_folds.x1s),
                        pg_catalog.unnest(compare_range_folds.ns), pg_catalog.unnest(compare_range_folds.pair_counts))
             with ordinality as a(part, event_type, x0, x1, n, pairs, position)
    ) c
    where c.problem is not null
    order by c.position
    limit 1;
    if found then
        raise exception 'compare_range_folds: row #% of the answer of origin "%": %', bad.position, compare_range_folds.origin, bad.problem
            using errcode = '22023';
    end if;
    select a.part, a.event_type into bad
    from rows from (pg_catalog.unnest(compare_range_folds.part_numbers), pg_catalog.unnest(compare_range_folds.event_types))
         as a(part, event_type)
    group by a.part, a.event_type
    having pg_catalog.count(*) > 1
    limit 1;
    if found then
        raise exception 'compare_range_folds: (part %, event_type %) appears more than once in the answer of origin "%"',
            bad.part, pg_catalog.quote_literal(bad.event_type), compare_range_folds.origin
            using errcode = '22023';
    end if;
    return query
    with answer as (
        select a.part, a.event_type, a.x0, a.x1, a.n, a.pairs
        from rows from (pg_catalog.unnest(compare_range_folds.part_numbers), pg_catalog.unnest(compare_range_folds.event_types),
                        pg_catalog.unnest(compare_range_folds.x0s), pg_catalog.unnest(compare_range_folds.x1s),
                        pg_catalog.unnest(compare_range_folds.ns), pg_catalog.unnest(compare_range_folds.pair_counts))
             as a(part, event_type, x0, x1, n, pairs)
    ), mine as (
        select streamseal._key_part(streamseal.tenant_key(m.tenant), compare_range_folds.key_lo, compare_range_folds.key_hi,
                                    compare_range_folds.parts) as part,
               m.event_type, pg_catalog.bit_xor(m.x0) as x0, pg_catalog.bit_xor(m.x1) as x1, pg_catalog.sum(m.n)::bigint as n,
               pg_catalog.count(*) as pairs
        from streamseal._local_range_pairs(compare_range_folds.origin, compare_range_folds.from_seq, compare_range_folds.to_seq,
                                           compare_range_folds.scope_types, compare_range_folds.scope_tenants,
                                           compare_range_folds.key_lo, compare_range_folds.key_hi) m
        group by 1, 2
    ), paired as (
        select coalesce(m.part, a.part) as part, coalesce(m.event_type, a.event_type) as event_type,
               coalesce(m.x0, 0) as local_x0, coalesce(m.x1, 0) as local_x1, coalesce(m.n, 0) as local_n,
               coalesce(m.pairs, 0) as local_pairs,
               coalesce(a.x0, 0) as origin_x0, coalesce(a.x1, 0) as origin_x1, coalesce(a.n, 0) as origin_n,
               coalesce(a.pairs, 0) as origin_pairs
        from mine m full join answer a on a.part = m.part and a.event_type = m.event_type
    )
    select p.part, k.part_lo, k.part_hi, p.event_type, p.local_x0, p.local_x1, p.local_n, p.local_pairs,
           p.origin_x0, p.origin_x1, p.origin_n, p.origin_pairs,
           streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n)
    from paired p
    join streamseal._key_parts(compare_range_folds.key_lo, compare_range_folds.key_hi, compare_range_folds.parts) k on k.part = p.part
    where streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n) is not null
    order by p.part, p.event_type;
end
$$;

-- compare_range_tenant_digests holds one answer_range_tenant_digests (parallel arrays, one
-- element per (tenant, event_type)) for [from_seq, to_seq) against this store's per-(tenant,
-- type) folds of the tenants of [key_lo, key_hi) over the scope, and returns the pairs that
-- differ, classified by _divergence_reason. A local pair the answer does not report is
-- 'local_extra'. A tenant whose key lies outside the range refuses the answer whole (22023).
create function streamseal.compare_range_tenant_digests(origin text, from_seq bigint, to_seq bigint,
                                                        key_lo bigint, key_hi bigint,
                                                        tenants text[], event_types text[], x0s bigint[], x1s bigint[], ns bigint[],
                                                        scope_types text[], scope_tenants text[])
returns table (tenant text, event_type text, local_x0 bigint, local_x1 bigint, local_n bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, reason text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
declare
    bad record;
begin
    -- GUARD: an answer is read whole or refused whole.
    perform streamseal._require_comparison('compare_range_tenant_digests', compare_range_tenant_digests.origin,
        compare_range_tenant_digests.from_seq, compare_range_tenant_digests.to_seq, interval '0');
    perform streamseal._require_key_range('compare_range_tenant_digests', compare_range_tenant_digests.key_lo,
                                          compare_range_tenant_digests.key_hi, null);
    perform streamseal._require_answer_rows('compare_range_tenant_digests', compare_range_tenant_digests.origin,
        coalesce(compare_range_tenant_digests.tenants, '{}'::text[]),
        compare_range_tenant_digests.event_types, compare_range_tenant_digests.x0s, compare_range_tenant_digests.x1s,
        compare_range_tenant_digests.ns, compare_range_tenant_digests.scope_types, compare_range_tenant_digests.scope_tenants,
        null, null);
    select a.position, a.tenant into bad
    from rows from (pg_catalog.unnest(compare_range_tenant_digests.tenants), pg_catalog.unnest(compare_range_tenant_digests.event_types))
         with ordinality as a(tenant, event_type, position)
    where a.event_type is not null
      and (streamseal.tenant_key(a.tenant) < compare_range_tenant_digests.key_lo
           or streamseal.tenant_key(a.tenant) >= compare_range_tenant_digests.key_hi)
    order by a.position
    limit 1;
    if found then
        raise exception 'compare_range_tenant_digests: row #% of the answer of origin "%": tenant % has key %, outside the range [%, %) asked',
            bad.position, compare_range_tenant_digests.origin, pg_catalog.quote_literal(bad.tenant), streamseal.tenant_key(bad.tenant),
            compare_range_tenant_digests.key_lo, compare_range_tenant_digests.key_hi
            using errcode = '22023';
    end if;
    return query
    with answer as (
        select a.tenant, a.event_type, a.x0, a.x1, a.n
        from rows from (pg_catalog.unnest(compare_range_tenant_digests.tenants), pg_catalog.unnest(compare_range_tenant_digests.event_types),
                        pg_catalog.unnest(compare_range_tenant_digests.x0s), pg_catalog.unnest(compare_range_tenant_digests.x1s),
                        pg_catalog.unnest(compare_range_tenant_digests.ns)) as a(tenant, event_type, x0, x1, n)
        where a.event_type is not null
    ), mine as (
        select m.tenant, m.event_type, m.x0, m.x1, m.n
        from streamseal._local_range_pairs(compare_range_tenant_digests.origin, compare_range_tenant_digests.from_seq,
                                           compare_range_tenant_digests.to_seq, compare_range_tenant_digests.scope_types,
                                           compare_range_tenant_digests.scope_tenants,
                                           compare_range_tenant_digests.key_lo, compare_range_tenant_digests.key_hi) m
    ), paired as (
        select coalesce(m.tenant, a.tenant) as tenant, coalesce(m.event_type, a.event_type) as event_type,
               coalesce(m.x0, 0) as local_x0, coalesce(m.x1, 0) as local_x1, coalesce(m.n, 0) as local_n,
               coalesce(a.x0, 0) as origin_x0, coalesce(a.x1, 0) as origin_x1, coalesce(a.n, 0) as origin_n
        from mine m full join answer a on a.tenant = m.tenant and a.event_type = m.event_type
    )
    select p.tenant, p.event_type, p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n,
           streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n)
    from paired p
    where streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n) is not null
    order by p.tenant, p.event_type;
end
$$;
