-- Tenant folds: the audit's origin -> type -> tenant -> stream exchange (invariant 8). XOR digests
-- compose, so a type's digest over many tenants is one fold: a healthy audit exchanges one digest
-- per type whatever the tenant count, and only a mismatched type is drilled into by tenant pages.
-- The manifest server answers (answer_type_folds, answer_tenant_digests_page); the auditor
-- compares (compare_type_folds, compare_tenant_digests) over the scope its request names.
--
-- The scope: both sides must fold the same set of (tenant, type) pairs, or a healthy pair of
-- stores would never compare equal. The consumer names the set in its request, from its own
-- subscriptions (subscription_scope), as parallel arrays scope_types / scope_tenants: one element
-- per (type, tenant), a null tenant meaning every tenant of that type. The origin folds the pairs
-- of its lane in that scope AND granted to the requester; the consumer folds the pairs of its copy
-- in that scope. A pair the consumer names but the origin does not grant is folded only where the
-- consumer holds copies of it (kept from before a revocation): the fold then differs, the tenant
-- page shows the origin holds none of it for this requester, and it is reported (local_extra),
-- never deleted — the same verdict the per-(tenant, type) comparison gave.

-- _require_tenant_scope refuses a scope that is not parallel arrays of non-empty type names
-- (tenant null: every tenant).
create function streamseal._require_tenant_scope(caller text, scope_types text[], scope_tenants text[])
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    perform streamseal._require_parallel(_require_tenant_scope.caller, array['scope_types', 'scope_tenants'],
        array[pg_catalog.cardinality(_require_tenant_scope.scope_types), pg_catalog.cardinality(_require_tenant_scope.scope_tenants)],
        array[pg_catalog.array_ndims(_require_tenant_scope.scope_types), pg_catalog.array_ndims(_require_tenant_scope.scope_tenants)]);
    if exists (select from pg_catalog.unnest(_require_tenant_scope.scope_types) t(event_type)
               where t.event_type is null or t.event_type = '') then
        raise exception '%: scope_types holds a null or empty event type: expected a non-empty name per scope element',
            _require_tenant_scope.caller
            using errcode = '22023';
    end if;
end
$$;

-- _in_tenant_scope says whether (tenant, event_type) lies in the scope. LANGUAGE sql without a
-- SET clause so it inlines.
create function streamseal._in_tenant_scope(tenant text, event_type text, scope_types text[], scope_tenants text[])
returns boolean
language sql
immutable
as $$
    select exists (
        select from rows from (pg_catalog.unnest(_in_tenant_scope.scope_types), pg_catalog.unnest(_in_tenant_scope.scope_tenants))
             as s(event_type, tenant)
        where s.event_type = _in_tenant_scope.event_type
          and (s.tenant is null or s.tenant = _in_tenant_scope.tenant))
$$;

-- subscription_scope is the scope a consumer names in its requests to origin: per subscribed
-- type, a null tenant when it consumes every tenant of it (from origin or from any origin),
-- else one row per tenant it names. Ordered by (event_type, tenant).
create function streamseal.subscription_scope(origin text)
returns table (event_type text, tenant text)
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    with subs as (
        select s.event_type, s.tenant, s.all_tenants
        from streamseal.subscriptions s
        where s.origin in (subscription_scope.origin, '*')
    )
    select distinct s.event_type, case when exists (select from subs a where a.event_type = s.event_type and a.all_tenants)
                                       then null else s.tenant end
    from subs s
    order by 1, 2
$$;

-- _answer_scoped_pairs is type_digests of lane over [from_seq, to_seq) narrowed to the pairs of
-- the scope that requester is granted, plus the watermark-only row; given a tenant key range
-- [key_lo, key_hi) (range_folds.sql: a drill-down step), over the tenants of that range only
-- (_type_digests_in_range). It is the one scope filter of every answer (answer_type_folds,
-- answer_tenant_digests_page, answer_range_folds, answer_range_tenant_digests). The tests are
-- hashed IN subplans, not a per-row call of _in_tenant_scope and _granted: at 500 000 pairs those
-- cost 5 s more than the fold itself. PL/pgSQL with custom plans, so the key range's presence is a
-- constant when the statement is planned and only one source is read.
create function streamseal._answer_scoped_pairs(requester text, lane text, from_seq bigint, to_seq bigint,
                                                scope_types text[], scope_tenants text[], settle interval,
                                                key_lo bigint default null, key_hi bigint default null)
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
        from streamseal.type_digests(_answer_scoped_pairs.lane, _answer_scoped_pairs.from_seq,
                                     _answer_scoped_pairs.to_seq, _answer_scoped_pairs.settle) d
        where _answer_scoped_pairs.key_lo is null
        union all
        select d.tenant, d.event_type, d.x0, d.x1, d.n, d.watermark
        from streamseal._type_digests_in_range(_answer_scoped_pairs.lane, _answer_scoped_pairs.from_seq, _answer_scoped_pairs.to_seq,
                                               _answer_scoped_pairs.settle, _answer_scoped_pairs.key_lo, _answer_scoped_pairs.key_hi,
                                               _answer_scoped_pairs.scope_types) d
        where _answer_scoped_pairs.key_lo is not null
    ), scope as materialized (
        select s.event_type, s.tenant
        from rows from (pg_catalog.unnest(_answer_scoped_pairs.scope_types), pg_catalog.unnest(_answer_scoped_pairs.scope_tenants))
             as s(event_type, tenant)
    ), granted as materialized (
        select g.event_type, g.tenant, g.all_tenants from streamseal.grants g where g.service = _answer_scoped_pairs.requester
    )
    select a.tenant, a.event_type, a.x0, a.x1, a.n, a.watermark
    from answer a
    where a.event_type is not null
      and (a.event_type in (select s.event_type from scope s where s.tenant is null)
           or (a.tenant, a.event_type) in (select s.tenant, s.event_type from scope s where s.tenant is not null))
      and (a.event_type in (select g.event_type from granted g where g.all_tenants)
           or (a.tenant, a.event_type) in (select g.tenant, g.event_type from granted g where not g.all_tenants))
    union all
    select null, null, 0::bigint, 0::bigint, 0::bigint, pg_catalog.max(a.watermark) from answer a;
end
$$;

-- answer_type_folds is the origin's healthy-audit answer: per event type of the scope, the fold
-- over every tenant of the scope that requester is granted, of lane over [from_seq, watermark)
-- (type_digests: sealed epochs plus the live fringe). One row per type holding anything; a
-- window holding nothing in scope answers one row with a null event_type carrying the watermark.
create function streamseal.answer_type_folds(requester text, lane text, from_seq bigint, to_seq bigint,
                                             scope_types text[], scope_tenants text[],
                                             settle interval default interval '0')
returns table (event_type text, x0 bigint, x1 bigint, n bigint, watermark bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    perform streamseal._require_tenant_scope('answer_type_folds', answer_type_folds.scope_types, answer_type_folds.scope_tenants);
    return query
    with answer as materialized (
        select p.tenant, p.event_type, p.x0, p.x1, p.n, p.watermark
        from streamseal._answer_scoped_pairs(answer_type_folds.requester, answer_type_folds.lane, answer_type_folds.from_seq,
                                             answer_type_folds.to_seq, answer_type_folds.scope_types, answer_type_folds.scope_tenants,
                                             answer_type_folds.settle) p
    ), folded as (
        select a.event_type, pg_catalog.bit_xor(a.x0) as x0, pg_catalog.bit_xor(a.x1) as x1, pg_catalog.sum(a.n)::bigint as n
        from answer a
        where a.event_type is not null
        group by a.event_type
    )
    select f.event_type, f.x0, f.x1, f.n, (select pg_catalog.max(a.watermark) from answer a) from folded f
    union all
    select null, 0::bigint, 0::bigint, 0::bigint, (select pg_catalog.max(a.watermark) from answer a)
    where not exists (select from folded)
    order by 1;
end
$$;

-- answer_tenant_digests_page is the drill-down into mismatched types: per (tenant, event_type)
-- of the scope (the consumer names only the mismatched types) that requester is granted, of
-- lane over [from_seq, watermark), whole tenants after after_tenant (null: from the first) in
-- tenant order while the page holds at most max_digests rows (the first tenant always). Every
-- row carries the watermark and resume_after: the page's last tenant when more remain, null when
-- the window is complete; never '' (see the page's rule). An empty page is one row with a null
-- tenant.
create function streamseal.answer_tenant_digests_page(requester text, lane text, from_seq bigint, to_seq bigint,
                                                      scope_types text[], scope_tenants text[],
                                                      after_tenant text, max_digests integer,
                                                      settle interval default interval '0')
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint, watermark bigint, resume_after text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    perform streamseal._require_tenant_scope('answer_tenant_digests_page', answer_tenant_digests_page.scope_types,
                                             answer_tenant_digests_page.scope_tenants);
    if answer_tenant_digests_page.max_digests is null or answer_tenant_digests_page.max_digests < 1 then
        raise exception 'answer_tenant_digests_page: max_digests % is invalid: expected a positive page size',
            coalesce(answer_tenant_digests_page.max_digests::text, 'null')
            using errcode = '22023';
    end if;
    return query
    with answer as materialized (
        select p.tenant, p.event_type, p.x0, p.x1, p.n, p.watermark
        from streamseal._answer_scoped_pairs(answer_tenant_digests_page.requester, answer_tenant_digests_page.lane,
                 answer_tenant_digests_page.from_seq, answer_tenant_digests_page.to_seq, answer_tenant_digests_page.scope_types,
                 answer_tenant_digests_page.scope_tenants, answer_tenant_digests_page.settle) p
    ), pairs as (
        select a.tenant, a.event_type, a.x0, a.x1, a.n
        from answer a
        where a.event_type is not null
          -- Tenant pages are in byte order (collate "C"), whatever either database's default
          -- collation: the consumer holds them to (covered_after, covered_through] in the same order.
          and (answer_tenant_digests_page.after_tenant is null or a.tenant collate "C" > answer_tenant_digests_page.after_tenant)
    ), ranked as (
        select p.*,
               pg_catalog.dense_rank() over (order by p.tenant collate "C") as tenant_rank,
               -- RANGE framing counts every row of the current tenant: whole tenants only.
               pg_catalog.count(*) over (order by p.tenant collate "C" range between unbounded preceding and current row) as rows_through
        from pairs p
    ), page as (
        -- The single-tenant service's tenant '' never ends a page that has more after it: a
        -- cursor of '' reads as "from the first" on the wire, so such a page takes the next
        -- tenant too (it may hold one tenant's rows more than max_digests; the server chunks it).
        select r.* from ranked r
        where r.tenant_rank = 1 or r.rows_through <= answer_tenant_digests_page.max_digests
           or (r.tenant_rank = 2 and exists (select from ranked f where f.tenant_rank = 1 and f.tenant = ''))
    ), cursor as (
        select case when exists (select from ranked r where r.tenant_rank > (select pg_catalog.max(p.tenant_rank) from page p))
                    then (select pg_catalog.max(p.tenant collate "C") from page p) end as resume_after
    ), bounds as (
        select pg_catalog.max(a.watermark) as watermark from answer a
    )
    select p.tenant, p.event_type, p.x0, p.x1, p.n, b.watermark, c.resume_after
    from page p cross join bounds b cross join cursor c
    union all
    select null, null, 0::bigint, 0::bigint, 0::bigint, b.watermark, null::text
    from bounds b
    where not exists (select from page)
    order by 1, 2;
end
$$;

-- _local_pair_folds is this consumer's fold of its copy of origin's lane over exactly
-- [from_seq, to_seq), per (tenant, event_type) of the scope: type_digests (sealed epochs, fringes live) plus
-- a live fold above its watermark, which type_digests caps at the local settled max (as
-- compare_type_digests does: a fresh local arrival still belongs to the origin's window).
create function streamseal._local_pair_folds(origin text, from_seq bigint, to_seq bigint,
                                             scope_types text[], scope_tenants text[])
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint)
language sql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
    with served as materialized (
        select d.tenant, d.event_type, d.x0, d.x1, d.n, d.watermark
        from streamseal.type_digests(_local_pair_folds.origin, _local_pair_folds.from_seq, _local_pair_folds.to_seq) d
    ), parts as (
        select s.tenant, s.event_type, s.x0, s.x1, s.n from served s where s.event_type is not null
        union all
        select f.tenant, f.event_type, f.x0, f.x1, f.n
        from (select pg_catalog.max(s.watermark) as watermark from served s) w
        cross join lateral streamseal._epoch_fold(_local_pair_folds.origin, w.watermark, _local_pair_folds.to_seq) f
    )
    , scope as materialized (
        select s.event_type, s.tenant
        from rows from (pg_catalog.unnest(_local_pair_folds.scope_types), pg_catalog.unnest(_local_pair_folds.scope_tenants))
             as s(event_type, tenant)
    )
    select p.tenant, p.event_type, pg_catalog.bit_xor(p.x0), pg_catalog.bit_xor(p.x1), pg_catalog.sum(p.n)::bigint
    from parts p
    -- Hashed IN subplans, not a per-row _in_tenant_scope (see _answer_scoped_pairs).
    where p.event_type in (select s.event_type from scope s where s.tenant is null)
       or (p.tenant, p.event_type) in (select s.tenant, s.event_type from scope s where s.tenant is not null)
    group by p.tenant, p.event_type
$$;

-- _require_answer_rows refuses answer rows (parallel arrays) holding a bad digest, a pair outside
-- the scope, a tenant outside the covered range (covered_after, covered_through], or a duplicate
-- key. tenants null: a type-level answer (one row per type). Rows with a null event_type are the
-- watermark-only row and are ignored.
create function streamseal._require_answer_rows(caller text, origin text, tenants text[], event_types text[],
                                                x0s bigint[], x1s bigint[], ns bigint[],
                                                scope_types text[], scope_tenants text[],
                                                covered_after text, covered_through text)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    bad record;
    per_type boolean := _require_answer_rows.tenants is null;
begin
    perform streamseal._require_tenant_scope(_require_answer_rows.caller, _require_answer_rows.scope_types,
                                             _require_answer_rows.scope_tenants);
    perform streamseal._require_parallel(_require_answer_rows.caller, array['event_types', 'x0s', 'x1s', 'ns'],
        array[pg_catalog.cardinality(_require_answer_rows.event_types), pg_catalog.cardinality(_require_answer_rows.x0s),
              pg_catalog.cardinality(_require_answer_rows.x1s), pg_catalog.cardinality(_require_answer_rows.ns)],
        array[pg_catalog.array_ndims(_require_answer_rows.event_types), pg_catalog.array_ndims(_require_answer_rows.x0s),
              pg_catalog.array_ndims(_require_answer_rows.x1s), pg_catalog.array_ndims(_require_answer_rows.ns)]);
    if not per_type and pg_catalog.cardinality(_require_answer_rows.tenants) is distinct from
                        pg_catalog.cardinality(_require_answer_rows.event_types) then
        raise exception '%: tenants has % elements for % event_types: expected parallel arrays', _require_answer_rows.caller,
            coalesce(pg_catalog.cardinality(_require_answer_rows.tenants), 0), coalesce(pg_catalog.cardinality(_require_answer_rows.event_types), 0)
            using errcode = '22023';
    end if;
    select c.position, c.problem into bad
    from (
        select a.position, case
            when a.event_type is null then case
                when coalesce(a.x0, 0) <> 0 or coalesce(a.x1, 0) <> 0 or coalesce(a.n, 0) <> 0 then
                    'a row without an event_type carries only the watermark: expected digest (0, 0, 0)' end
            when not per_type and a.tenant is null then 'tenant null is invalid: expected a name ('''' for a single-tenant service)'
            when per_type and not exists (select from pg_catalog.unnest(_require_answer_rows.scope_types) s(t) where s.t = a.event_type) then
                pg_catalog.format('event_type %L lies outside the scope the request named', a.event_type)
            when not per_type and not streamseal._in_tenant_scope(a.tenant, a.event_type, _require_answer_rows.scope_types,
                                                                 _require_answer_rows.scope_tenants) then
                pg_catalog.format('(tenant %L, event_type %L) lies outside the scope the request named', a.tenant, a.event_type)
            when not per_type and (a.tenant collate "C" <= _require_answer_rows.covered_after
                                   or a.tenant collate "C" > _require_answer_rows.covered_through) then
                pg_catalog.format('tenant %L lies outside the covered tenant range (%s, %s]', a.tenant,
                                  coalesce(pg_catalog.quote_literal(_require_answer_rows.covered_after), 'null'),
                                  coalesce(pg_catalog.quote_literal(_require_answer_rows.covered_through), 'null'))
            else streamseal._answer_digest_problem(a.x0, a.x1, a.n)
        end as problem
        from rows from (pg_catalog.unnest(coalesce(_require_answer_rows.tenants, '{}'::text[])),
                        pg_catalog.unnest(_require_answer_rows.event_types),
                        pg_catalog.unnest(_require_answer_rows.x0s), pg_catalog.unnest(_require_answer_rows.x1s),
                        pg_catalog.unnest(_require_answer_rows.ns))
             with ordinality as a(tenant, event_type, x0, x1, n, position)
    ) c
    where c.problem is not null
    order by c.position
    limit 1;
    if found then
        raise exception '%: row #% of the answer of origin "%": %', _require_answer_rows.caller, bad.position,
            _require_answer_rows.origin, bad.problem
            using errcode = '22023';
    end if;
    select a.tenant, a.event_type into bad
    from rows from (pg_catalog.unnest(coalesce(_require_answer_rows.tenants, '{}'::text[])), pg_catalog.unnest(_require_answer_rows.event_types))
         as a(tenant, event_type)
    where a.event_type is not null
    group by a.tenant, a.event_type
    having pg_catalog.count(*) > 1
    limit 1;
    if found then
        raise exception '%: (tenant %, event_type %) appears more than once in the answer of origin "%"', _require_answer_rows.caller,
            coalesce(pg_catalog.quote_literal(bad.tenant), 'null'), pg_catalog.quote_literal(bad.event_type), _require_answer_rows.origin
            using errcode = '22023';
    end if;
end
$$;

-- compare_type_folds holds an origin's answer_type_folds for [from_seq, to_seq) (to_seq: its
-- watermark) against this store's fold of the same window over the same scope, and returns the
-- event types of the scope that differ, classified by _divergence_reason (a side that lacks a
-- type is (0, 0, 0)). Any difference means "drill into tenant pages". An answer row outside the
-- scope, a bad digest or a duplicate type refuses the answer whole (22023).
create function streamseal.compare_type_folds(origin text, from_seq bigint, to_seq bigint,
                                              event_types text[], x0s bigint[], x1s bigint[], ns bigint[],
                                              scope_types text[], scope_tenants text[])
returns table (event_type text, local_x0 bigint, local_x1 bigint, local_n bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, reason text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    -- GUARD: an answer is read whole or refused whole.
    perform streamseal._require_comparison('compare_type_folds', compare_type_folds.origin,
        compare_type_folds.from_seq, compare_type_folds.to_seq, interval '0');
    perform streamseal._require_answer_rows('compare_type_folds', compare_type_folds.origin, null,
        compare_type_folds.event_types, compare_type_folds.x0s, compare_type_folds.x1s, compare_type_folds.ns,
        compare_type_folds.scope_types, compare_type_folds.scope_tenants, null, null);
    return query
    with answer as (
        select a.event_type, a.x0, a.x1, a.n
        from rows from (pg_catalog.unnest(compare_type_folds.event_types), pg_catalog.unnest(compare_type_folds.x0s),
                        pg_catalog.unnest(compare_type_folds.x1s), pg_catalog.unnest(compare_type_folds.ns)) as a(event_type, x0, x1, n)
        where a.event_type is not null
    ), mine as (
        select m.event_type, pg_catalog.bit_xor(m.x0) as x0, pg_catalog.bit_xor(m.x1) as x1, pg_catalog.sum(m.n)::bigint as n
        from streamseal._local_pair_folds(compare_type_folds.origin, compare_type_folds.from_seq, compare_type_folds.to_seq,
                                          compare_type_folds.scope_types, compare_type_folds.scope_tenants) m
        group by m.event_type
    ), paired as (
        select coalesce(m.event_type, a.event_type) as event_type,
               coalesce(m.x0, 0) as local_x0, coalesce(m.x1, 0) as local_x1, coalesce(m.n, 0) as local_n,
               coalesce(a.x0, 0) as origin_x0, coalesce(a.x1, 0) as origin_x1, coalesce(a.n, 0) as origin_n
        from mine m full join answer a on a.event_type = m.event_type
    )
    select p.event_type, p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n,
           streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n)
    from paired p
    where streamseal._divergence_reason(p.local_x0, p.local_x1, p.local_n, p.origin_x0, p.origin_x1, p.origin_n) is not null
    order by p.event_type;
end
$$;

-- compare_tenant_digests holds one answer_tenant_digests_page (parallel arrays, one element per
-- (tenant, event_type)) for [from_seq, to_seq) against this store's per-(tenant, type) fold of
-- the same window, over the scope and the tenant range the page covers, (covered_after,
-- covered_through] (null: open), and returns the pairs that differ, classified by
-- _divergence_reason. A local pair in range the page does not report is 'local_extra'.
create function streamseal.compare_tenant_digests(origin text, from_seq bigint, to_seq bigint,
                                                  tenants text[], event_types text[], x0s bigint[], x1s bigint[], ns bigint[],
                                                  scope_types text[], scope_tenants text[],
                                                  covered_after text default null, covered_through text default null)
returns table (tenant text, event_type text, local_x0 bigint, local_x1 bigint, local_n bigint,
               origin_x0 bigint, origin_x1 bigint, origin_n bigint, reason text)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
#variable_conflict use_column
begin
    -- GUARD: a page is read whole or refused whole.
    perform streamseal._require_comparison('compare_tenant_digests', compare_tenant_digests.origin,
        compare_tenant_digests.from_seq, compare_tenant_digests.to_seq, interval '0');
    if compare_tenant_digests.covered_after >= compare_tenant_digests.covered_through collate "C" then
        raise exception 'compare_tenant_digests: tenant range (%, %] is invalid: expected covered_after < covered_through (null: unbounded)',
            pg_catalog.quote_literal(compare_tenant_digests.covered_after), pg_catalog.quote_literal(compare_tenant_digests.covered_through)
            using errcode = '22023';
    end if;
    perform streamseal._require_answer_rows('compare_tenant_digests', compare_tenant_digests.origin,
        coalesce(compare_tenant_digests.tenants, '{}'::text[]),
        compare_tenant_digests.event_types, compare_tenant_digests.x0s, compare_tenant_digests.x1s, compare_tenant_digests.ns,
        compare_tenant_digests.scope_types, compare_tenant_digests.scope_tenants,
        compare_tenant_digests.covered_after, compare_tenant_digests.covered_through);
    return query
    with answer as (
        select a.tenant, a.event_type, a.x0, a.x1, a.n
        from rows from (pg_catalog.unnest(compare_tenant_digests.tenants), pg_catalog.unnest(compare_tenant_digests.event_types),
                        pg_catalog.unnest(compare_tenant_digests.x0s), pg_catalog.unnest(compare_tenant_digests.x1s),
                        pg_catalog.unnest(compare_tenant_digests.ns)) as a(tenant, event_type, x0, x1, n)
        where a.event_type is not null
    ), mine as (
        select m.tenant, m.event_type, m.x0, m.x1, m.n
        from streamseal._local_pair_folds(compare_tenant_digests.origin, compare_tenant_digests.from_seq, compare_tenant_digests.to_seq,
                                          compare_tenant_digests.scope_types, compare_tenant_digests.scope_tenants) m
        where (compare_tenant_digests.covered_after is null or m.tenant collate "C" > compare_tenant_digests.covered_after)
          and (compare_tenant_digests.covered_through is null or m.tenant collate "C" <= compare_tenant_digests.covered_through)
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
