-- The repair ledger on the consumer (DESIGN.md "Ledger", invariant 9): what the audit job
-- reported and asked about each divergent bucket, so an unchanged divergence is not re-reported
-- every cycle, repair requests back off, and a restart or a second replica repeats nothing. The
-- audit job calls ledger_observe with a comparison's differing buckets and ledger_heal_matched
-- with the comparison, which heals the ledgered buckets that now match (through ledger_heal);
-- the maintenance job reads ledger_backlog for the gauges.
--
-- Buckets travel as a JSON array of objects whose keys are the column names of
-- compare_stream_digests, so a comparison feeds the ledger unchanged:
--   ledger_observe(origin, (select jsonb_agg(c) from streamseal.compare_stream_digests(...) c))
-- Only these keys are read: tenant, event_type, stream_id (strings); for ledger_observe also
-- reason, local_x0, local_x1, local_n, origin_x0, origin_x1, origin_n (integers) and skipped
-- (optional boolean). Other keys are ignored.

-- _ledger_lock_key is the advisory lock that serializes the ledger of one origin: observe and
-- heal read a bucket's row and decide from it, so two replicas auditing the same origin must
-- take turns or both would report and request what only one should.
create function streamseal._ledger_lock_key(origin text)
returns bigint
language sql
immutable
as $$ select pg_catalog.hashtextextended('streamseal.ledger:' || _ledger_lock_key.origin, 0) $$;

-- _json_is_int64 says whether a JSON value is an integer that fits a bigint.
create function streamseal._json_is_int64(value jsonb)
returns boolean
language sql
immutable
as $$
    select case
        when pg_catalog.jsonb_typeof(_json_is_int64.value) = 'number' then (
            select v.n = pg_catalog.trunc(v.n) and v.n between -9223372036854775808 and 9223372036854775807
            from (select _json_is_int64.value::numeric as n) v)
        else false
    end
$$;

-- _ledger_key_problem names what is wrong with the key of one bucket object, or returns null.
create function streamseal._ledger_key_problem(bucket jsonb)
returns text
language sql
stable
as $$
    select case
        when pg_catalog.jsonb_typeof(_ledger_key_problem.bucket) is distinct from 'object' then
            pg_catalog.format('%s is invalid: expected an object', coalesce(pg_catalog.left(_ledger_key_problem.bucket::text, 200), 'null'))
        when pg_catalog.jsonb_typeof(_ledger_key_problem.bucket -> 'tenant') is distinct from 'string' then
            pg_catalog.format('tenant %s is invalid: expected a string ('''' for a single-tenant service)',
                              coalesce(_ledger_key_problem.bucket -> 'tenant', 'null'))
        when pg_catalog.jsonb_typeof(_ledger_key_problem.bucket -> 'event_type') is distinct from 'string'
          or _ledger_key_problem.bucket ->> 'event_type' = '' then
            pg_catalog.format('event_type %s is invalid: expected a non-empty string',
                              coalesce(_ledger_key_problem.bucket -> 'event_type', 'null'))
        when pg_catalog.jsonb_typeof(_ledger_key_problem.bucket -> 'stream_id') is distinct from 'string'
          or _ledger_key_problem.bucket ->> 'stream_id' = '' then
            pg_catalog.format('stream_id %s is invalid: expected a non-empty string',
                              coalesce(_ledger_key_problem.bucket -> 'stream_id', 'null'))
    end
$$;

-- _ledger_signature_problem names what is wrong with the observation in one bucket object (its
-- reason, its two folds, its skipped flag), or returns null. The reason must be the one the
-- folds give (_divergence_reason): a caller cannot ask for a deficit the digests do not show,
-- nor ledger a bucket whose folds agree.
create function streamseal._ledger_signature_problem(bucket jsonb)
returns text
language sql
stable
as $$
    select coalesce(
        (select pg_catalog.format('%s %s is invalid: expected an integer that fits a bigint', k.name,
                                  coalesce(_ledger_signature_problem.bucket -> k.name, 'null'))
         from pg_catalog.unnest(array['local_x0', 'local_x1', 'local_n', 'origin_x0', 'origin_x1', 'origin_n'])
              with ordinality as k(name, position)
         where not streamseal._json_is_int64(_ledger_signature_problem.bucket -> k.name)
         order by k.position
         limit 1),
        (select case
            when pg_catalog.jsonb_typeof(_ledger_signature_problem.bucket -> 'skipped') not in ('boolean', 'null') then
                pg_catalog.format('skipped %s is invalid: expected true, false or nothing', _ledger_signature_problem.bucket -> 'skipped')
            when s.reason is null or s.reason not in ('deficit', 'identity_mismatch', 'local_extra') then
                pg_catalog.format('reason %s is invalid: expected deficit, identity_mismatch or local_extra',
                                  coalesce(_ledger_signature_problem.bucket -> 'reason', 'null'))
            when s.local_n < 0 or s.origin_n < 0 then
                pg_catalog.format('counts local_n %s, origin_n %s are invalid: expected n >= 0', s.local_n, s.origin_n)
            when streamseal._divergence_reason(s.local_x0, s.local_x1, s.local_n, s.origin_x0, s.origin_x1, s.origin_n) is null then
                pg_catalog.format('folds local (%s, %s, %s) and origin (%s, %s, %s) agree: expected a divergent bucket',
                                  s.local_x0, s.local_x1, s.local_n, s.origin_x0, s.origin_x1, s.origin_n)
            when s.reason <> streamseal._divergence_reason(s.local_x0, s.local_x1, s.local_n, s.origin_x0, s.origin_x1, s.origin_n) then
                pg_catalog.format('reason %L does not match the folds local (%s, %s, %s) and origin (%s, %s, %s): expected %L',
                                  s.reason, s.local_x0, s.local_x1, s.local_n, s.origin_x0, s.origin_x1, s.origin_n,
                                  streamseal._divergence_reason(s.local_x0, s.local_x1, s.local_n,
                                                                s.origin_x0, s.origin_x1, s.origin_n))
         end
         from (select _ledger_signature_problem.bucket ->> 'reason' as reason,
                      (_ledger_signature_problem.bucket -> 'local_x0')::numeric::bigint as local_x0,
                      (_ledger_signature_problem.bucket -> 'local_x1')::numeric::bigint as local_x1,
                      (_ledger_signature_problem.bucket -> 'local_n')::numeric::bigint as local_n,
                      (_ledger_signature_problem.bucket -> 'origin_x0')::numeric::bigint as origin_x0,
                      (_ledger_signature_problem.bucket -> 'origin_x1')::numeric::bigint as origin_x1,
                      (_ledger_signature_problem.bucket -> 'origin_n')::numeric::bigint as origin_n) s))
$$;

-- _require_finite_time refuses a null or infinite clock reading (now_at), naming the caller.
create function streamseal._require_finite_time(caller text, now_at timestamptz)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if _require_finite_time.now_at is null or not pg_catalog.isfinite(_require_finite_time.now_at) then
        raise exception '%: now_at % is invalid: expected a finite time',
            _require_finite_time.caller, coalesce(_require_finite_time.now_at::text, 'null')
            using errcode = '22023';
    end if;
end
$$;

-- _require_ledger_buckets refuses a batch that is not a JSON array of bucket objects, naming the
-- first bad one by position: each must carry a key (tenant, event_type, stream_id) and, with
-- signatures, its reason and both folds. The whole batch is checked before the caller writes.
create function streamseal._require_ledger_buckets(caller text, origin text, buckets jsonb, signatures boolean)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    bad record;
begin
    if pg_catalog.jsonb_typeof(_require_ledger_buckets.buckets) is distinct from 'array' then
        raise exception '%: buckets is %: expected a JSON array of %', _require_ledger_buckets.caller,
            coalesce('a JSON ' || pg_catalog.jsonb_typeof(_require_ledger_buckets.buckets), 'null'),
            case when _require_ledger_buckets.signatures then 'bucket objects' else 'bucket keys' end
            using errcode = '22023';
    end if;
    select c.position, c.problem into bad
    from (
        select b.position,
               coalesce(streamseal._ledger_key_problem(b.bucket),
                        case when _require_ledger_buckets.signatures then streamseal._ledger_signature_problem(b.bucket) end) as problem
        from pg_catalog.jsonb_array_elements(_require_ledger_buckets.buckets) with ordinality as b(bucket, position)
    ) c
    where c.problem is not null
    order by c.position
    limit 1;
    if found then
        raise exception '%: bucket #% of origin "%": %', _require_ledger_buckets.caller, bad.position,
            _require_ledger_buckets.origin, bad.problem
            using errcode = '22023';
    end if;
end
$$;

-- ledger_observe records one comparison's divergent buckets of origin (a JSON array, see the
-- header; a bucket with "skipped": true is in flight and is ignored) and tells the caller, per
-- bucket, whether to report it and whether to request its repair:
--   * first sighting: the row is inserted; report; request when the reason is 'deficit'.
--   * same signature (reason and all six digest values unchanged): report only when the last
--     report is at least cooldown old; request only a deficit, only once now_at reaches
--     next_attempt_at.
--   * changed signature (either fold moved: progress or fresh damage): news. Report now, the
--     repair budget restarts (attempts from 0), request when it is a deficit. first_seen_at
--     stays: the bucket has not healed since.
--   * identity_mismatch and local_extra are never requested: redelivery cannot move such a fold
--     and local history is never deleted on a remote's say-so (invariant 10). They alarm.
-- Each request counts an attempt and sets next_attempt_at = now_at + _repair_backoff (backoff.sql:
-- base * 2^(k - 1), k = least(attempts, max_attempts)): the wait doubles up to the slowest rung
-- and stays there.
-- A bucket that spent its budget is never dropped (a ladder that stops goes silent forever): it
-- keeps being requested at the slowest rung and reported at the cooldown, and settled = true
-- (attempts >= max_attempts) tells the caller to raise it as an alarm for an operator.
-- dry_run (report-only audits, issue 15 item 4) climbs a ladder of its own instead: the same
-- decisions on the same schedule (report-only records each request exactly when auto-repair
-- would send it, never every round), counted in dry_run_attempts / dry_run_next_attempt_at,
-- while attempts, next_attempt_at and exhausted_at are left as they are (nothing was sent). A
-- changed signature resets both ladders; a heal forgets both.
-- Returns the state after the call; attempts counts the requests under the current signature
-- on the ladder this call climbs (the dry run's when dry_run).
-- now_at is the clock for every decision (injectable for tests). Calls for one origin take
-- turns (an advisory transaction lock), so replicas sharing the ledger repeat nothing; call it
-- in a READ COMMITTED transaction so each turn reads what the previous one committed.
create function streamseal.ledger_observe(
    origin text, buckets jsonb, cooldown interval default interval '60 minutes',
    backoff_base interval default interval '300 seconds', max_attempts integer default 8,
    now_at timestamptz default pg_catalog.now(), dry_run boolean default false)
returns table (tenant text, event_type text, stream_id text, reason text, report boolean, request boolean,
               attempts integer, settled boolean)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    bad record;
begin
    -- GUARD: the options and the whole batch are checked before anything is written.
    perform streamseal._require_other_origin('ledger_observe', ledger_observe.origin,
        'the ledger tracks copies of other origins'' lanes');
    if ledger_observe.cooldown is null or ledger_observe.cooldown < interval '0' then
        raise exception 'ledger_observe: cooldown % is invalid: expected a non-negative interval',
            coalesce(ledger_observe.cooldown::text, 'null')
            using errcode = '22023';
    end if;
    perform streamseal._require_backoff('ledger_observe', ledger_observe.backoff_base, ledger_observe.max_attempts);
    perform streamseal._require_finite_time('ledger_observe', ledger_observe.now_at);
    if ledger_observe.dry_run is null then
        raise exception 'ledger_observe: dry_run is null: expected true (report-only) or false (auto-repair)'
            using errcode = '22023';
    end if;
    perform streamseal._require_ledger_buckets('ledger_observe', ledger_observe.origin, ledger_observe.buckets, true);
    select b.bucket ->> 'tenant' as tenant, b.bucket ->> 'event_type' as event_type, b.bucket ->> 'stream_id' as stream_id
    into bad
    from pg_catalog.jsonb_array_elements(ledger_observe.buckets) as b(bucket)
    group by 1, 2, 3
    having pg_catalog.count(*) > 1
    limit 1;
    if found then
        raise exception 'ledger_observe: bucket (tenant %, event_type %, stream_id %) of origin "%" appears more than once',
            pg_catalog.quote_literal(bad.tenant), pg_catalog.quote_literal(bad.event_type),
            pg_catalog.quote_literal(bad.stream_id), ledger_observe.origin
            using errcode = '22023';
    end if;

    perform pg_catalog.pg_advisory_xact_lock(streamseal._ledger_lock_key(ledger_observe.origin));

    return query
    with observed as (
        select b.bucket ->> 'tenant' as tenant, b.bucket ->> 'event_type' as event_type, b.bucket ->> 'stream_id' as stream_id,
               b.bucket ->> 'reason' as reason,
               (b.bucket -> 'local_x0')::numeric::bigint as local_x0, (b.bucket -> 'local_x1')::numeric::bigint as local_x1,
               (b.bucket -> 'local_n')::numeric::bigint as local_n, (b.bucket -> 'origin_x0')::numeric::bigint as origin_x0,
               (b.bucket -> 'origin_x1')::numeric::bigint as origin_x1, (b.bucket -> 'origin_n')::numeric::bigint as origin_n
        from pg_catalog.jsonb_array_elements(ledger_observe.buckets) as b(bucket)
        where case when pg_catalog.jsonb_typeof(b.bucket -> 'skipped') = 'boolean'
                   then not (b.bucket -> 'skipped')::boolean else true end
    ), paired as (
        select o.*, l.first_seen_at as old_first_seen_at, l.last_reported_at as old_last_reported_at,
               l.attempts as old_attempts, l.last_attempt_at as old_last_attempt_at,
               l.next_attempt_at as old_next_attempt_at, l.exhausted_at as old_exhausted_at,
               l.dry_run_attempts as old_dry_run_attempts, l.dry_run_last_attempt_at as old_dry_run_last_attempt_at,
               l.dry_run_next_attempt_at as old_dry_run_next_attempt_at,
               -- The ladder this call climbs: the real one, or the dry run's.
               case when ledger_observe.dry_run then l.dry_run_attempts else l.attempts end as old_ladder_attempts,
               case when ledger_observe.dry_run then l.dry_run_last_attempt_at else l.last_attempt_at end as old_ladder_last_attempt_at,
               case when ledger_observe.dry_run then l.dry_run_next_attempt_at else l.next_attempt_at end as old_ladder_next_attempt_at,
               -- same: the row exists with this exact signature.
               coalesce((l.reason, l.local_x0, l.local_x1, l.local_n, l.origin_x0, l.origin_x1, l.origin_n)
                        = (o.reason, o.local_x0, o.local_x1, o.local_n, o.origin_x0, o.origin_x1, o.origin_n), false) as same
        from observed o
        left join streamseal.repair_ledger l
            on l.origin = ledger_observe.origin and l.tenant = o.tenant
           and l.event_type = o.event_type and l.stream_id = o.stream_id
    ), judged as (
        select p.*,
               not p.same or p.old_last_reported_at <= ledger_observe.now_at - ledger_observe.cooldown as report_now,
               p.reason = 'deficit'
                   and (not p.same or p.old_ladder_next_attempt_at is null or ledger_observe.now_at >= p.old_ladder_next_attempt_at) as request_now
        from paired p
    ), counted as (
        select j.*,
               case when j.same then j.old_ladder_attempts else 0 end + case when j.request_now then 1 else 0 end as attempts_now
        from judged j
    ), decided as (
        select c.*,
               case when c.report_now then ledger_observe.now_at else c.old_last_reported_at end as last_reported_at,
               case when c.request_now then ledger_observe.now_at else c.old_ladder_last_attempt_at end as ladder_last_attempt_at,
               case
                   when c.reason <> 'deficit' then null
                   -- In seconds, capped at 100 years, so any ladder's arithmetic stays finite.
                   when c.request_now then ledger_observe.now_at
                       + streamseal._repair_backoff(ledger_observe.backoff_base, c.attempts_now, ledger_observe.max_attempts)
                   else c.old_ladder_next_attempt_at
               end as ladder_next_attempt_at,
               case
                   -- A dry run spends no budget: the real exhaustion stands or, on a new
                   -- signature (a reset budget), clears.
                   when ledger_observe.dry_run then case when c.same then c.old_exhausted_at end
                   when c.reason <> 'deficit' or c.attempts_now < ledger_observe.max_attempts then null
                   when c.same and c.old_exhausted_at is not null then c.old_exhausted_at
                   else ledger_observe.now_at
               end as exhausted_at
        from counted c
    ), laddered as (
        -- The ladder climbed takes the new state; the other one stands, or resets with the
        -- signature (a new divergence restarts every budget).
        select d.*,
               case when ledger_observe.dry_run then case when d.same then d.old_attempts else 0 end
                    else d.attempts_now end as real_attempts,
               case when ledger_observe.dry_run then case when d.same then d.old_last_attempt_at end
                    else d.ladder_last_attempt_at end as real_last_attempt_at,
               case when ledger_observe.dry_run then case when d.same then d.old_next_attempt_at end
                    else d.ladder_next_attempt_at end as real_next_attempt_at,
               case when ledger_observe.dry_run then d.attempts_now
                    else case when d.same then d.old_dry_run_attempts else 0 end end as dry_attempts,
               case when ledger_observe.dry_run then d.ladder_last_attempt_at
                    else case when d.same then d.old_dry_run_last_attempt_at end end as dry_last_attempt_at,
               case when ledger_observe.dry_run then d.ladder_next_attempt_at
                    else case when d.same then d.old_dry_run_next_attempt_at end end as dry_next_attempt_at
        from decided d
    ), written as (
        -- A bucket with nothing to say (same signature, no report, no request) is not rewritten:
        -- an unchanged divergence costs no row version per audit.
        insert into streamseal.repair_ledger as l (
            origin, tenant, event_type, stream_id, reason, local_x0, local_x1, local_n, origin_x0, origin_x1, origin_n,
            first_seen_at, last_reported_at, attempts, last_attempt_at, next_attempt_at, exhausted_at,
            dry_run_attempts, dry_run_last_attempt_at, dry_run_next_attempt_at)
        select ledger_observe.origin, d.tenant, d.event_type, d.stream_id, d.reason, d.local_x0, d.local_x1, d.local_n,
               d.origin_x0, d.origin_x1, d.origin_n, coalesce(d.old_first_seen_at, ledger_observe.now_at),
               d.last_reported_at, d.real_attempts, d.real_last_attempt_at, d.real_next_attempt_at, d.exhausted_at,
               d.dry_attempts, d.dry_last_attempt_at, d.dry_next_attempt_at
        from laddered d
        where not d.same or d.report_now or d.request_now or d.exhausted_at is distinct from d.old_exhausted_at
        order by d.tenant, d.event_type, d.stream_id
        on conflict on constraint repair_ledger_pkey do update
            set reason = excluded.reason,
                local_x0 = excluded.local_x0, local_x1 = excluded.local_x1, local_n = excluded.local_n,
                origin_x0 = excluded.origin_x0, origin_x1 = excluded.origin_x1, origin_n = excluded.origin_n,
                last_reported_at = excluded.last_reported_at, attempts = excluded.attempts,
                last_attempt_at = excluded.last_attempt_at, next_attempt_at = excluded.next_attempt_at,
                exhausted_at = excluded.exhausted_at, dry_run_attempts = excluded.dry_run_attempts,
                dry_run_last_attempt_at = excluded.dry_run_last_attempt_at,
                dry_run_next_attempt_at = excluded.dry_run_next_attempt_at
        returning 1
    )
    select d.tenant, d.event_type, d.stream_id, d.reason, d.report_now, d.request_now, d.attempts_now,
           d.reason = 'deficit' and d.attempts_now >= ledger_observe.max_attempts
    from decided d
    order by d.tenant, d.event_type, d.stream_id;
end
$$;

-- _ledger_rows returns the ctids of origin's ledger rows for a JSON array of {tenant,
-- event_type, stream_id} keys: one primary-key probe per distinct key, fenced, so a call costs
-- its keys whatever the statistics say (as a join, a ledger not analyzed since it grew was read
-- whole for every call: 4.5 s for 500 keys against 50000 rows instead of 3 ms). The caller holds
-- the origin's ledger lock, which every writer of those rows takes, so the ctids stay valid.
create function streamseal._ledger_rows(origin text, buckets jsonb)
returns tid[]
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(pg_catalog.array_agg(r.row_id), '{}')
    from (
        select distinct b.tenant, b.event_type, b.stream_id
        from pg_catalog.jsonb_to_recordset(coalesce(_ledger_rows.buckets, '[]')) as b(tenant text, event_type text, stream_id text)
    ) k
    cross join lateral (
        select x.ctid as row_id
        from streamseal.repair_ledger x
        where x.origin = _ledger_rows.origin and x.tenant = k.tenant
          and x.event_type = k.event_type and x.stream_id = k.stream_id
        -- A fence: one index probe per key.
        offset 0
    ) r
$$;

-- ledger_heal forgets the ledgered buckets of origin that now match (a JSON array of objects
-- with tenant, event_type and stream_id; see the header) and returns, for each row it deleted,
-- heal_age = now_at - first_seen_at: first sighting to proven heal, read from the row the
-- delete destroys (the bucket_heal_seconds histogram). A bucket not in the ledger returns
-- nothing. A later divergence of a healed bucket is a new incident with a fresh budget.
-- Which buckets match is the caller's knowledge: ledgered buckets inside a compared page's types
-- and stream range that the comparison no longer returned (a skipped one has not healed).
create function streamseal.ledger_heal(origin text, buckets jsonb, now_at timestamptz default pg_catalog.now())
returns table (tenant text, event_type text, stream_id text, heal_age interval)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    -- GUARD: the whole batch is checked before anything is deleted.
    perform streamseal._require_other_origin('ledger_heal', ledger_heal.origin,
        'the ledger tracks copies of other origins'' lanes');
    perform streamseal._require_finite_time('ledger_heal', ledger_heal.now_at);
    perform streamseal._require_ledger_buckets('ledger_heal', ledger_heal.origin, ledger_heal.buckets, false);

    perform pg_catalog.pg_advisory_xact_lock(streamseal._ledger_lock_key(ledger_heal.origin));

    return query
    with healed as (
        -- Rows reached by TID under the lock taken above: a call costs its buckets (_ledger_rows).
        delete from streamseal.repair_ledger l
        where l.ctid = any (streamseal._ledger_rows(ledger_heal.origin, ledger_heal.buckets))
        returning l.tenant, l.event_type, l.stream_id, ledger_heal.now_at - l.first_seen_at as heal_age
    )
    select h.tenant, h.event_type, h.stream_id, h.heal_age
    from healed h
    order by h.tenant, h.event_type, h.stream_id;
end
$$;

-- ledger_heal_matched heals what a comparison proved: every ledgered bucket of origin whose
-- event type is one of event_types, whose stream lies in (after_stream, through_stream] (either
-- bound null: open), and that compared — the comparison's divergent buckets, the JSON shape of
-- the header, skipped ones included because they are still in flight — does not name. The audit
-- calls it after each stream page (the page's range) and, with '[]' and no range, after a window
-- matched whole at type level (every stream of those types matches); tenants (null: every
-- tenant) narrows it to a page asked for those tenants alone. This is the rule "which
-- buckets count as healed", kept here once; ledger_heal does the deleting.
create function streamseal.ledger_heal_matched(origin text, event_types text[], compared jsonb,
                                               after_stream text default null, through_stream text default null,
                                               now_at timestamptz default pg_catalog.now(),
                                               tenants text[] default null)
returns table (tenant text, event_type text, stream_id text, heal_age interval)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    cleared jsonb;
begin
    -- GUARD: the comparison and the compared types are checked before anything is read.
    if ledger_heal_matched.event_types is null then
        raise exception 'ledger_heal_matched: event_types must be an array of the compared event types, got null'
            using errcode = '22023';
    end if;
    if ledger_heal_matched.compared is null or pg_catalog.jsonb_typeof(ledger_heal_matched.compared) <> 'array' then
        raise exception 'ledger_heal_matched: compared must be a JSON array of the comparison''s divergent buckets, got %',
            coalesce(pg_catalog.jsonb_typeof(ledger_heal_matched.compared), 'null')
            using errcode = '22023';
    end if;
    perform streamseal._require_other_origin('ledger_heal_matched', ledger_heal_matched.origin,
        'the ledger tracks copies of other origins'' lanes');

    -- Read the ledger under the lock ledger_heal takes too, so a concurrent observe by another
    -- replica cannot slip a fresh sighting between this read and the delete.
    perform pg_catalog.pg_advisory_xact_lock(streamseal._ledger_lock_key(ledger_heal_matched.origin));
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'tenant', l.tenant, 'event_type', l.event_type, 'stream_id', l.stream_id)), '[]')
    into cleared
    from streamseal.repair_ledger l
    where l.origin = ledger_heal_matched.origin
      and l.event_type = any (ledger_heal_matched.event_types)
      and (ledger_heal_matched.tenants is null or l.tenant = any (ledger_heal_matched.tenants))
      -- The page's range in byte order, as the origin paged it (collate "C": migration 045).
      and (ledger_heal_matched.after_stream is null or l.stream_id > ledger_heal_matched.after_stream collate "C")
      and (ledger_heal_matched.through_stream is null or l.stream_id <= ledger_heal_matched.through_stream collate "C")
      and not exists (
          select 1
          from pg_catalog.jsonb_to_recordset(ledger_heal_matched.compared) as d(stream_id text, tenant text, event_type text)
          where d.stream_id = l.stream_id and d.tenant = l.tenant and d.event_type = l.event_type);

    return query
    select h.tenant, h.event_type, h.stream_id, h.heal_age
    from streamseal.ledger_heal(ledger_heal_matched.origin, cleared, ledger_heal_matched.now_at) h;
end
$$;

-- ledger_backlog reads the ledger for the convergence gauges, per origin: unhealed buckets,
-- exhausted ones (spent their repair budget: an operator's, not patience's), and the age of the
-- oldest unhealed divergence at now_at. Every known origin (known_origins) answers, with zeros
-- when nothing is unhealed, so a gauge falls to 0 instead of keeping its last value.
create function streamseal.ledger_backlog(now_at timestamptz default pg_catalog.now())
returns table (origin text, unhealed bigint, exhausted bigint, oldest_age interval)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
    perform streamseal._require_finite_time('ledger_backlog', ledger_backlog.now_at);
    return query
    select o.origin, pg_catalog.count(l.origin), pg_catalog.count(l.exhausted_at),
           coalesce(ledger_backlog.now_at - pg_catalog.min(l.first_seen_at), interval '0')
    from (
        select k.origin from streamseal.known_origins k
        union
        select distinct r.origin from streamseal.repair_ledger r
    ) o
    left join streamseal.repair_ledger l on l.origin = o.origin
    group by o.origin
    order by o.origin;
end
$$;

-- ledger_unrequest takes back the attempt ledger_observe counted for buckets the caller then did
-- not request (the per-audit cap cut them): the attempt count drops by one and the bucket is due
-- again at now_at, so it goes out at the next audit instead of waiting out a backoff for a
-- request that never left. buckets is a JSON array of {tenant, event_type, stream_id}. With
-- dry_run (report-only) it gives back on the dry run's ladder (ledger_observe), not the real one.
create function streamseal.ledger_unrequest(origin text, buckets jsonb, now_at timestamptz default pg_catalog.now(),
                                            dry_run boolean default false)
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    changed integer;
begin
    perform streamseal._require_other_origin('ledger_unrequest', ledger_unrequest.origin,
        'the ledger tracks copies of other origins'' lanes');
    if ledger_unrequest.dry_run is null then
        raise exception 'ledger_unrequest: dry_run is null: expected true (report-only) or false (auto-repair)'
            using errcode = '22023';
    end if;
    perform pg_catalog.pg_advisory_xact_lock(streamseal._ledger_lock_key(ledger_unrequest.origin));
    -- Rows reached by TID under the lock taken above: a call costs its buckets (_ledger_rows).
    if ledger_unrequest.dry_run then
        update streamseal.repair_ledger l
        set dry_run_attempts = greatest(l.dry_run_attempts - 1, 0),
            dry_run_next_attempt_at = case when l.dry_run_attempts - 1 > 0 then ledger_unrequest.now_at end,
            dry_run_last_attempt_at = case when l.dry_run_attempts - 1 > 0 then l.dry_run_last_attempt_at end
        where l.ctid = any (streamseal._ledger_rows(ledger_unrequest.origin, ledger_unrequest.buckets))
          and l.reason = 'deficit' and l.dry_run_attempts > 0;
    else
        update streamseal.repair_ledger l
        set attempts = greatest(l.attempts - 1, 0),
            next_attempt_at = case when l.attempts - 1 > 0 then ledger_unrequest.now_at end,
            last_attempt_at = case when l.attempts - 1 > 0 then l.last_attempt_at end,
            exhausted_at = null
        where l.ctid = any (streamseal._ledger_rows(ledger_unrequest.origin, ledger_unrequest.buckets))
          -- No other index condition here, so the TID scan is the plan whatever the statistics.
          and l.reason = 'deficit' and l.attempts > 0;
    end if;
    get diagnostics changed = row_count;
    return changed;
end
$$;
