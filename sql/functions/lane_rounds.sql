-- Lane-set marks on the consumer (issue 17; invariant 15): the inbox's verifier records each
-- listed beat of an origin (record_lane_round; the beat lists the pairs its round checkpointed,
-- with their last type_seq), and the origin's mark, known_origins.lanes_announced_through, moves
-- over a round's window once every listed pair this store subscribes to has a lane announced
-- that far. read_feed (feed.sql) never certifies the origin past the mark.
--
-- A pair also waits, though its lane was announced that far, while this store holds a checkpoint
-- of the lane not verified yet (checkpoint_inbox: retried after a failed verification, or still
-- queued) that would lower the lane's birth at or below the pair's last (the pending rule, below):
-- a later checkpoint verified first births the lane above type_seqs nobody has checked yet, and
-- the mark must not pass them while their checkpoint is known to be coming (issue 17, migration
-- 040). Such a pair is held: when the checkpoint is verified (the birth lowers) or leaves the
-- inbox unverified (refused, given up, superseded), the next verification of the lane or the
-- next beat of the origin (_lane_rounds_advance) lets it go, unless the born-above rule holds it.
--
-- The born-above rule (migration 042): a pair whose lane was announced that far but born at or
-- above the pair's last (birth_floor >= last: a later checkpoint birthed the lane, and no
-- checkpoint verified here checked the pair's window) is held too, though the store holds no
-- trace of the earlier checkpoint (its recording failed and the broker redelivers it; a replica
-- fetched it and has not committed its record), until the birth lowers or _lane_rounds_hold()
-- has passed since the store first saw it held (lane_round_pairs.held_since, this database's
-- now()); then the next beat or verification of the origin lets it go. A checkpoint that will
-- never come (expired from the broker, of a type subscribed later, given up) thus costs a bounded
-- delay of certification, never a stall. A lane born by the round itself (birth_floor < last,
-- the normal case) never waits. Written inline like the pending rule (no probe: the lane row is
-- already joined); the hold is immutable, folded into each plan.

-- The pending rule, written inline where it is tested (a call of a SQL function with its own
-- search_path is not inlined: 21 us a pair against 1.5 us inline, and a round lists up to 50 000
-- pairs): checkpoint_inbox holds a checkpoint of the pair's lane not verified yet whose first
-- type_seq lies at or below both the pair's last and the lane's birth_floor (verified, it would
-- lower the birth to first - 1: lanes.sql), so type_seqs at or below last are still to be
-- checked. One probe of checkpoint_inbox_by_lane. Rows recorded before migration 040 name no
-- lane and hold nothing.

-- _lane_rounds_hold: how long a pair whose lane was born above its round's window is held (the
-- born-above rule, below), measured from when the store first saw it held. It is the longest the
-- broker can still deliver the pair's earlier checkpoint R1 after R1 was first delivered, which
-- happened before the later checkpoint that births the lane above was delivered (one lane's
-- checkpoints share a subject and a durable: first deliveries follow the stream's order), hence
-- before the pair was held. The inbox's consumers (controlplane/inbox) allow MaxDeliver = 10
-- deliveries (wire.MaxDeliverDefault) with AckWait = 1 minute; after a failed delivery n the
-- inbox naks with wire.RetryDelay(1 s, n) = 1, 2, 4, 8, 16, 32, 60, 60, 60 s (n = 1..9). A
-- delivery is held at most AckWait before the broker redelivers (a fetch never answered, a
-- replica that died), or handled within it and nak'd with the delay: the gap after delivery n is
-- at most AckWait + RetryDelay(n). Nine gaps: 9 x 60 + 243 = 783 s; the tenth delivery's own
-- handling, at most AckWait more: 843 s. Rounded up to 15 minutes (900 s). Immutable: folded
-- into each plan, never a call per pair.
create function streamseal._lane_rounds_hold()
returns interval
language sql
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$ select interval '15 minutes' $$;

-- _lane_rounds_advance moves origin's mark over the recorded rounds that account for it: a
-- round whose window starts at or below the mark, all of whose parts were recorded and none of
-- whose listed pairs still waits for its lane (a waiting pair this store no longer subscribes to
-- does not count: it will never be verified). Then it forgets the rounds the mark passed. The
-- mark only rises. Returns it (null: no listed round ever recorded). First it lets go of the
-- origin's held pairs whose waiting checkpoint is gone (verified, refused, given up, superseded)
-- and whose lane's birth lowered below their last or whose hold expired (the born-above rule),
-- so a checkpoint that left the inbox unverified holds the mark until the next beat at most, and
-- one never received until the first beat after the hold.
-- Cost: a probe of the held pairs' index (none, the usual case), and a key probe per round at the
-- mark (the first waiting pair found ends it). Callers hold the origin's known_origins row
-- (record_lane_round, _lane_rounds_clear).
create function streamseal._lane_rounds_advance(origin text)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    mark bigint;
    next_mark bigint;
begin
    select k.lanes_announced_through into mark from streamseal.known_origins k where k.origin = _lane_rounds_advance.origin;
    if mark is null then
        return null;
    end if;
    delete from streamseal.lane_round_pairs p
    using streamseal.lanes l
    where p.origin = _lane_rounds_advance.origin and p.held
      and l.origin = p.origin and l.tenant = p.tenant and l.event_type = p.event_type
      and not (l.birth_floor >= p.last_type_seq  -- the born-above rule
               and coalesce(p.held_since, '-infinity') > pg_catalog.now() - streamseal._lane_rounds_hold())
      and not exists (select from streamseal.checkpoint_inbox c  -- the pending rule
                      where c.origin = p.origin and c.event_type = p.event_type and c.tenant = p.tenant
                        and c.first_type_seq <= least(p.last_type_seq, l.birth_floor));
    loop
        select pg_catalog.max(r.window_to) into next_mark
        from streamseal.lane_rounds r
        where r.origin = _lane_rounds_advance.origin and r.window_from <= mark and r.window_to > mark
          and r.parts_seen = pg_catalog.int4multirange(pg_catalog.int4range(1, r.parts + 1))
          and not exists (select from streamseal.lane_round_pairs p
                          where p.origin = r.origin and p.round_at = r.round_at
                            and streamseal.subscribed(p.origin, p.tenant, p.event_type));
        exit when next_mark is null;
        mark := next_mark;
    end loop;
    delete from streamseal.lane_rounds r where r.origin = _lane_rounds_advance.origin and r.window_to <= mark;
    update streamseal.known_origins k
    set lanes_announced_through = mark
    where k.origin = _lane_rounds_advance.origin and k.lanes_announced_through < mark;
    return mark;
end
$$;

-- _lane_rounds_clear is verify_checkpoint's part: the waiting pairs of the lanes one checkpoint
-- message verified (origin, event_type, tenants) leave when their lane is now announced as far
-- as their round listed, by key (lane_round_pairs_by_lane), unless a checkpoint of the lane still
-- waiting in the inbox would lower its birth at or below their last, or their lane was born at
-- or above their last within the hold: those stay, held (the pending and born-above rules;
-- held_since is set when a pair is first held); when any left, the mark moves over what that accounts for. GUARD: it holds the
-- origin's known_origins row first, as record_lane_round does, so a round recorded while this
-- verification ran is either seen here (recorded first: its pairs are cleared) or sees this
-- verification's lanes (recorded after: it records no pair they cover); no pair is left waiting
-- for a lane that caught up. Nothing to clear (the usual case) costs the row lock and one index
-- probe per tenant; a pair whose lane caught up costs one more (the pending rule).
create function streamseal._lane_rounds_clear(origin text, event_type text, tenants text[])
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    cleared bigint;
begin
    perform from streamseal.known_origins k where k.origin = _lane_rounds_clear.origin for no key update;
    with announced as materialized (
        select w.origin, w.round_at, w.tenant, w.event_type, w.held,
               (l.birth_floor >= w.last_type_seq  -- the born-above rule
                and coalesce(w.held_since, pg_catalog.now()) > pg_catalog.now() - streamseal._lane_rounds_hold())
               or exists (select from streamseal.checkpoint_inbox c  -- the pending rule
                          where c.origin = w.origin and c.event_type = w.event_type and c.tenant = w.tenant
                            and c.first_type_seq <= least(w.last_type_seq, l.birth_floor)) as pending
        from pg_catalog.unnest(_lane_rounds_clear.tenants) t(tenant)
        cross join lateral (
            select x.origin, x.round_at, x.tenant, x.event_type, x.last_type_seq, x.held, x.held_since
            from streamseal.lane_round_pairs x
            where x.origin = _lane_rounds_clear.origin and x.event_type = _lane_rounds_clear.event_type
              and x.tenant = t.tenant
            -- A fence: one probe of lane_round_pairs_by_lane per tenant, whatever the statistics
            -- say (a table filled by one burst and not analyzed yet was read whole per call).
            offset 0) w
        join streamseal.lanes l
          on l.origin = w.origin and l.tenant = w.tenant and l.event_type = w.event_type
         and l.last_type_seq >= w.last_type_seq
    ), held as (
        update streamseal.lane_round_pairs p
        set held = true, held_since = pg_catalog.now()
        from announced a
        where a.pending and not a.held
          and (p.origin, p.round_at, p.tenant, p.event_type) = (a.origin, a.round_at, a.tenant, a.event_type)
    ), deleted as (
        delete from streamseal.lane_round_pairs p
        using announced a
        where not a.pending
          and (p.origin, p.round_at, p.tenant, p.event_type) = (a.origin, a.round_at, a.tenant, a.event_type)
        returning 1
    )
    select pg_catalog.count(*) into cleared from deleted;
    if cleared > 0 then
        perform streamseal._lane_rounds_advance(_lane_rounds_clear.origin);
    end if;
end
$$;

-- record_lane_round records one part of a listed beat of origin: the round the origin took at
-- round_at over [window_from, window_to), part `part` of `parts`, listing in parallel arrays the
-- (tenant, event_type) pairs the round checkpointed and the last type_seq each reached. Pairs
-- this store does not subscribe to are set aside; so are pairs whose lane was already announced
-- that far, unless a checkpoint of the lane waiting in the inbox would lower its birth at or
-- below the pair's last, or the lane was born at or above it (recorded held from now: the
-- pending and born-above rules). The first listed round recorded for
-- an origin starts its mark at window_from (what lies below came from beats that listed nothing:
-- an older binary, documented in the README).
-- Returns the origin's mark after the call. The verifier calls it for every beat part, after
-- observe_origin (an origin never observed is refused).
create function streamseal.record_lane_round(origin text, round_at timestamptz, window_from bigint, window_to bigint,
                                             part integer, parts integer, tenants text[], event_types text[],
                                             last_type_seqs bigint[])
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
set jit = off
as $$
declare
    mark bigint;
    bad record;
begin
    perform streamseal._require_other_origin('record_lane_round', record_lane_round.origin, 'a service ignores its own beats');
    perform streamseal._require_finite_time('record_lane_round', record_lane_round.round_at);
    perform streamseal._require_origin_window('record_lane_round', record_lane_round.origin,
                                              record_lane_round.window_from, record_lane_round.window_to);
    if record_lane_round.parts is null or record_lane_round.part is null or record_lane_round.parts < 1
       or record_lane_round.part < 1 or record_lane_round.part > record_lane_round.parts then
        raise exception 'record_lane_round: part % of % is invalid: expected 1 <= part <= parts',
            coalesce(record_lane_round.part::text, 'null'), coalesce(record_lane_round.parts::text, 'null')
            using errcode = '22023';
    end if;
    if record_lane_round.tenants is null or record_lane_round.event_types is null or record_lane_round.last_type_seqs is null
       or pg_catalog.array_ndims(record_lane_round.tenants) > 1
       or pg_catalog.cardinality(record_lane_round.event_types) <> pg_catalog.cardinality(record_lane_round.tenants)
       or pg_catalog.cardinality(record_lane_round.last_type_seqs) <> pg_catalog.cardinality(record_lane_round.tenants) then
        raise exception 'record_lane_round: tenants, event_types and last_type_seqs must be parallel one-dimensional arrays (empty for a round that checkpointed nothing)'
            using errcode = '22023';
    end if;
    select u.tenant, u.event_type, u.last into bad
    from rows from (pg_catalog.unnest(record_lane_round.tenants), pg_catalog.unnest(record_lane_round.event_types),
                    pg_catalog.unnest(record_lane_round.last_type_seqs)) u(tenant, event_type, last)
    where u.tenant is null or u.event_type is null or u.event_type = '' or u.last is null or u.last < 1
    limit 1;
    if found then
        raise exception 'record_lane_round: pair (tenant %, type %, last %) of origin "%" is invalid: expected a tenant, a type name and a last type_seq >= 1',
            coalesce(pg_catalog.quote_literal(bad.tenant), 'null'), coalesce(pg_catalog.quote_literal(bad.event_type), 'null'),
            coalesce(bad.last::text, 'null'), record_lane_round.origin
            using errcode = '22023';
    end if;

    -- GUARD: the origin's row, held to the commit, orders this call with other recorders and
    -- with verifications clearing pairs (_lane_rounds_clear). The mark starts at the first listed round.
    update streamseal.known_origins k
    set lanes_announced_through = coalesce(k.lanes_announced_through, record_lane_round.window_from)
    where k.origin = record_lane_round.origin
    returning k.lanes_announced_through into mark;
    if not found then
        raise exception 'record_lane_round: origin "%" is unknown: observe it (observe_origin) before recording its rounds',
            record_lane_round.origin
            using errcode = '22023';
    end if;
    if record_lane_round.window_to <= mark then
        -- The mark already covers the round.
        return mark;
    end if;

    insert into streamseal.lane_rounds as r (origin, round_at, window_from, window_to, parts, parts_seen)
    values (record_lane_round.origin, record_lane_round.round_at, record_lane_round.window_from, record_lane_round.window_to,
            record_lane_round.parts,
            pg_catalog.int4multirange(pg_catalog.int4range(record_lane_round.part, record_lane_round.part + 1)))
    on conflict on constraint lane_rounds_pkey do update
        set parts_seen = r.parts_seen + excluded.parts_seen
    returning r.window_from, r.window_to, r.parts into bad;
    if bad.window_from <> record_lane_round.window_from or bad.window_to <> record_lane_round.window_to
       or bad.parts <> record_lane_round.parts then
        raise exception 'record_lane_round: round % of origin "%" was recorded as window [%, %) in % parts, not [%, %) in %',
            record_lane_round.round_at, record_lane_round.origin, bad.window_from, bad.window_to, bad.parts,
            record_lane_round.window_from, record_lane_round.window_to, record_lane_round.parts
            using errcode = '22023';
    end if;

    insert into streamseal.lane_round_pairs as p (origin, round_at, tenant, event_type, last_type_seq, held, held_since)
    select record_lane_round.origin, record_lane_round.round_at, u.tenant, u.event_type, u.last,
           l.last_type_seq is not null, case when l.last_type_seq is not null then pg_catalog.now() end
    from (select v.tenant, v.event_type, pg_catalog.max(v.last) as last
          from rows from (pg_catalog.unnest(record_lane_round.tenants), pg_catalog.unnest(record_lane_round.event_types),
                          pg_catalog.unnest(record_lane_round.last_type_seqs)) v(tenant, event_type, last)
          where streamseal.subscribed(record_lane_round.origin, v.tenant, v.event_type)
          group by v.tenant, v.event_type) u
    left join streamseal.lanes l
      on l.origin = record_lane_round.origin and l.tenant = u.tenant and l.event_type = u.event_type
     and l.last_type_seq >= u.last
    where l.last_type_seq is null
       or l.birth_floor >= u.last  -- the born-above rule (held from now)
       or exists (select from streamseal.checkpoint_inbox c  -- the pending rule
                  where c.origin = record_lane_round.origin and c.event_type = u.event_type and c.tenant = u.tenant
                    and c.first_type_seq <= least(u.last, l.birth_floor))
    on conflict on constraint lane_round_pairs_pkey do update
        set last_type_seq = greatest(p.last_type_seq, excluded.last_type_seq),
            held = case when excluded.last_type_seq >= p.last_type_seq then excluded.held else p.held end,
            held_since = case when excluded.last_type_seq < p.last_type_seq then p.held_since
                              when excluded.held then coalesce(p.held_since, excluded.held_since) end;

    return streamseal._lane_rounds_advance(record_lane_round.origin);
end
$$;
