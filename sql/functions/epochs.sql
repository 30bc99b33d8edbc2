-- Epoch seals: closing settled history into immutable-by-default per-epoch folds, and the sweep's
-- backstop that re-checks them. close_epochs runs on the maintenance cadence;
-- verify_digest_epochs in the sweep. Late arrivals and mutations keep closed epochs exact through
-- _fold_changes(); these functions never hold a lane while a write into it is uncommitted.

-- close_epochs closes up to max_epochs epochs across lanes, oldest first within a lane, visiting
-- lanes least-recently-advanced first so none starves. An epoch closes only when the lane's
-- settled max lies beyond it and no unsettled arrival (stored within settle) sits inside it. A
-- lane blocked longer than stall_limit forces one epoch through per call (the sweep's verify
-- corrects anything a forced close got wrong). The width is pinned at a lane's first close.
-- Lanes are found by an index walk over (origin, origin_seq), so an idle call costs per lane.
create function streamseal.close_epochs(
    max_epochs integer default 100,
    width bigint default 100000,
    settle interval default interval '60 minutes',
    stall_limit interval default interval '3600 seconds')
returns table (origin text, epoch bigint, buckets integer, forced boolean)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT: its cost estimates grow with the store, and past jit_above_cost every call compiled
-- for ~30 ms (a 10M-event lane's whole-lane answer: 30 ms instead of 2 ms).
set jit = off
-- Custom plans always: a generic plan for these range predicates may pick a sequential scan
-- that costs the whole store (measured: an idle close_epochs went from 0.3 ms to 31 ms at 300k rows).
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    lane record;
    frontier streamseal.lane_epochs;
    closed integer := 0;
    lo bigint;
    hi bigint;
    settled_beyond boolean;
    unsettled_inside boolean;
    force_this boolean;
    bucket_count integer;
begin
    if close_epochs.max_epochs is null or close_epochs.max_epochs < 1 then
        raise exception 'close_epochs: max_epochs % is invalid: expected a positive count', close_epochs.max_epochs
            using errcode = '22023';
    end if;
    if close_epochs.width is null or close_epochs.width < 1 then
        raise exception 'close_epochs: width % is invalid: expected a positive number of sequences', close_epochs.width
            using errcode = '22023';
    end if;
    if close_epochs.settle is null or close_epochs.settle < interval '0'
       or close_epochs.stall_limit is null or close_epochs.stall_limit < interval '0' then
        raise exception 'close_epochs: settle % and stall_limit % must be non-negative intervals',
            close_epochs.settle, close_epochs.stall_limit
            using errcode = '22023';
    end if;

    for lane in
        with recursive lanes(origin) as (
            -- Every origin with a row (one index entry each); the own lane counts once it has a
            -- number (own events keep theirs in own_numbers: issue 16).
            select pg_catalog.min(e.origin) from streamseal.events e
            union all
            select (select pg_catalog.min(e.origin) from streamseal.events e
                    where e.origin > l.origin)
            from lanes l
            where l.origin is not null
        )
        select l.origin
        from lanes l
        left join streamseal.lane_epochs le on le.origin = l.origin
        where l.origin is not null
          and (l.origin <> self or exists (select from streamseal.own_numbers n))
        order by le.advanced_at nulls first, l.origin
    loop
        exit when closed >= close_epochs.max_epochs;
        -- A write into this lane is in flight: leave it for the next call rather than wait.
        continue when not pg_catalog.pg_try_advisory_xact_lock(streamseal._lane_lock_key(lane.origin));

        insert into streamseal.lane_epochs as le (origin, width, closed_through, advanced_at)
        values (lane.origin, close_epochs.width, 0, '-infinity')
        on conflict on constraint lane_epochs_pkey do nothing;

        loop
            exit when closed >= close_epochs.max_epochs;
            select le.* into frontier from streamseal.lane_epochs le where le.origin = lane.origin;
            lo := frontier.closed_through * frontier.width;
            hi := lo + frontier.width;

            -- The epoch holding the settled max stays open.
            if lane.origin = self then
                settled_beyond := (select st.last_origin_seq from streamseal.stamp_state st) >= hi;
                unsettled_inside := false; -- the own lane numbers only committed rows, upward
            else
                settled_beyond := exists (
                    select 1 from streamseal.events e
                    where e.origin = lane.origin and e.origin_seq >= hi
                      and e.stored_at < pg_catalog.now() - close_epochs.settle);
                unsettled_inside := settled_beyond and exists (
                    select 1 from streamseal.events e
                    where e.origin = lane.origin and e.origin_seq >= lo and e.origin_seq < hi
                      and e.stored_at >= pg_catalog.now() - close_epochs.settle);
            end if;
            exit when not settled_beyond;

            force_this := false;
            if unsettled_inside then
                if frontier.blocked_since is null then
                    update streamseal.lane_epochs le set blocked_since = pg_catalog.now()
                    where le.origin = lane.origin;
                    exit;
                end if;
                exit when pg_catalog.now() - frontier.blocked_since < close_epochs.stall_limit;
                force_this := true;
            end if;

            insert into streamseal.digest_epochs (origin, epoch, tenant, event_type, x0, x1, n)
            select lane.origin, frontier.closed_through, f.tenant, f.event_type, f.x0, f.x1, f.n
            from streamseal._epoch_fold(lane.origin, lo, hi) f;
            get diagnostics bucket_count = row_count;

            insert into streamseal.sealed_prefix as p (origin, tenant, event_type, x0, x1, n)
            select d.origin, d.tenant, d.event_type, d.x0, d.x1, d.n
            from streamseal.digest_epochs d
            where d.origin = lane.origin and d.epoch = frontier.closed_through
            order by d.tenant, d.event_type
            on conflict on constraint sealed_prefix_pkey do update
                set x0 = p.x0 # excluded.x0, x1 = p.x1 # excluded.x1, n = p.n + excluded.n;

            -- A forced close keeps blocked_since: the lane stays past its stall limit, so the next
            -- call forces the next blocked epoch instead of waiting a whole limit again.
            update streamseal.lane_epochs le
            set closed_through = frontier.closed_through + 1, advanced_at = pg_catalog.now(),
                blocked_since = case when force_this then le.blocked_since end
            where le.origin = lane.origin;

            closed := closed + 1;
            return query select lane.origin, frontier.closed_through, bucket_count, force_this;
            exit when force_this; -- one forced epoch per lane per call
        end loop;
    end loop;
end
$$;

-- verify_digest_epochs recomputes up to max_epochs closed epochs from the store, in (origin,
-- epoch) order starting after where the previous call stopped (wrapping around), refolds every
-- epoch that drifted, and returns per lane how many it checked, how many had drifted, and
-- whether the lane's sealed prefix had to be healed (re-derived from the epochs when this call
-- completes a pass over the lane). Any drift is
-- an unaccounted write path: an alarm, healed here. A lane with a write in flight ends
-- the call early (the cursor stays put, so the next call checks it).
create function streamseal.verify_digest_epochs(max_epochs integer default 1000)
returns table (origin text, checked integer, drifted integer, prefix_healed boolean)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- Custom plans always: a generic plan for these range predicates may pick a sequential scan
-- that costs the whole store (measured: an idle close_epochs went from 0.3 ms to 31 ms at 300k rows).
set plan_cache_mode = force_custom_plan
as $$
declare
    target record;
    start_origin text;
    start_epoch bigint;
    locked_lane text;
    differs boolean;
    stats jsonb := '{}';
begin
    if verify_digest_epochs.max_epochs is null or verify_digest_epochs.max_epochs < 1 then
        raise exception 'verify_digest_epochs: max_epochs % is invalid: expected a positive count', verify_digest_epochs.max_epochs
            using errcode = '22023';
    end if;
    select c.origin, c.epoch into start_origin, start_epoch from streamseal.epoch_verify_cursor c;

    for target in
        select le.origin, g.epoch, le.width, g.epoch = le.closed_through - 1 as completes_lane
        from streamseal.lane_epochs le
        cross join lateral pg_catalog.generate_series(0, le.closed_through - 1) as g(epoch)
        order by (le.origin, g.epoch) <= (start_origin, start_epoch) nulls first, le.origin, g.epoch
        limit verify_digest_epochs.max_epochs
    loop
        if locked_lane is distinct from target.origin then
            exit when not pg_catalog.pg_try_advisory_xact_lock(streamseal._lane_lock_key(target.origin));
            locked_lane := target.origin;
        end if;

        with actual as (
            select * from streamseal._epoch_fold(target.origin, target.epoch * target.width, (target.epoch + 1) * target.width)
        ), stored as (
            select d.tenant, d.event_type, d.x0, d.x1, d.n from streamseal.digest_epochs d
            where d.origin = target.origin and d.epoch = target.epoch and (d.x0, d.x1, d.n) <> (0, 0, 0)
        )
        select exists (
            select 1 from stored s full join actual a on a.tenant = s.tenant and a.event_type = s.event_type
            where s.tenant is null or a.tenant is null or (s.x0, s.x1, s.n) <> (a.x0, a.x1, a.n))
        into differs;

        if differs then
            delete from streamseal.digest_epochs d where d.origin = target.origin and d.epoch = target.epoch;
            insert into streamseal.digest_epochs (origin, epoch, tenant, event_type, x0, x1, n)
            select target.origin, target.epoch, f.tenant, f.event_type, f.x0, f.x1, f.n
            from streamseal._epoch_fold(target.origin, target.epoch * target.width, (target.epoch + 1) * target.width) f;
        end if;

        stats := pg_catalog.jsonb_set(stats, array[target.origin], pg_catalog.jsonb_build_array(
            coalesce((stats -> target.origin ->> 0)::integer, 0) + 1,
            coalesce((stats -> target.origin ->> 1)::integer, 0) + case when differs then 1 else 0 end,
            false,
            coalesce((stats -> target.origin ->> 3)::boolean, false) or target.completes_lane));
        insert into streamseal.epoch_verify_cursor as c (origin, epoch) values (target.origin, target.epoch)
        on conflict (singleton) do update set origin = excluded.origin, epoch = excluded.epoch;
    end loop;

    -- The sealed prefix is derived from the epochs, not the store. Re-derive it only for lanes
    -- whose pass this call completed (it verified their last closed epoch, and the cursor walked
    -- all earlier ones before): re-deriving from epochs not yet verified would copy a corrupt
    -- epoch row into a correct prefix, and from there into every whole-lane answer.
    for target in select s.key as origin from pg_catalog.jsonb_each(stats) s where (s.value ->> 3)::boolean loop
        with truth as (
            select d.tenant, d.event_type, pg_catalog.bit_xor(d.x0) as x0, pg_catalog.bit_xor(d.x1) as x1,
                   pg_catalog.sum(d.n)::bigint as n
            from streamseal.digest_epochs d
            where d.origin = target.origin
            group by d.tenant, d.event_type
            having pg_catalog.bit_xor(d.x0) <> 0 or pg_catalog.bit_xor(d.x1) <> 0 or pg_catalog.sum(d.n) <> 0
        ), stored as (
            select p.tenant, p.event_type, p.x0, p.x1, p.n from streamseal.sealed_prefix p
            where p.origin = target.origin and (p.x0, p.x1, p.n) <> (0, 0, 0)
        )
        select exists (
            select 1 from stored s full join truth t on t.tenant = s.tenant and t.event_type = s.event_type
            where s.tenant is null or t.tenant is null or (s.x0, s.x1, s.n) <> (t.x0, t.x1, t.n))
        into differs;
        if differs then
            delete from streamseal.sealed_prefix p where p.origin = target.origin;
            insert into streamseal.sealed_prefix (origin, tenant, event_type, x0, x1, n)
            select target.origin, d.tenant, d.event_type, pg_catalog.bit_xor(d.x0), pg_catalog.bit_xor(d.x1), pg_catalog.sum(d.n)
            from streamseal.digest_epochs d
            where d.origin = target.origin
            group by d.tenant, d.event_type;
        end if;
        stats := pg_catalog.jsonb_set(stats, array[target.origin, '2'], pg_catalog.to_jsonb(differs));
    end loop;

    return query
    select s.key, (s.value ->> 0)::integer, (s.value ->> 1)::integer, (s.value ->> 2)::boolean
    from pg_catalog.jsonb_each(stats) s
    order by s.key;
end
$$;
