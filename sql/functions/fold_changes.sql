-- _fold_changes: where counted events entering or leaving the store move the folds. The
-- write-path triggers (event_triggers.sql) hand it what their statement changed; it keeps
-- stream_digests, closed digest_epochs and sealed_prefix exact. (The origin generation moves
-- where the triggers record own history changes: history_changes.sql.) One exception: stamp()
-- folds the own events it numbers the same way inside its numbering statement (issue 16).
-- _h0 and _h1 over event ids, xor per bucket, upserts in key order: keep the two alike.

-- _apply_epoch_deltas folds deltas into closed epochs and the lane's sealed prefix, in key order.
create function streamseal._apply_epoch_deltas(deltas streamseal._epoch_delta[])
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    insert into streamseal.digest_epochs as d (origin, epoch, tenant, event_type, x0, x1, n)
    select delta.origin, delta.epoch, delta.tenant, delta.event_type, delta.x0, delta.x1, delta.n
    from pg_catalog.unnest(_apply_epoch_deltas.deltas) as delta
    order by delta.origin, delta.epoch, delta.tenant, delta.event_type
    on conflict (origin, epoch, tenant, event_type) do update
        set x0 = d.x0 # excluded.x0, x1 = d.x1 # excluded.x1, n = d.n + excluded.n;

    insert into streamseal.sealed_prefix as p (origin, tenant, event_type, x0, x1, n)
    select delta.origin, delta.tenant, delta.event_type,
           pg_catalog.bit_xor(delta.x0), pg_catalog.bit_xor(delta.x1), pg_catalog.sum(delta.n)
    from pg_catalog.unnest(_apply_epoch_deltas.deltas) as delta
    group by delta.origin, delta.tenant, delta.event_type
    order by delta.origin, delta.tenant, delta.event_type
    on conflict (origin, tenant, event_type) do update
        set x0 = p.x0 # excluded.x0, x1 = p.x1 # excluded.x1, n = p.n + excluded.n;
$$;

-- _bump_origin_generation starts a new generation of this service's sealed history.
create function streamseal._bump_origin_generation()
returns bigint
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    update streamseal.origin_generation g
    set generation = g.generation + 1, bumped_at = pg_catalog.now()
    returning g.generation
$$;

-- _fold_changes applies one statement's counted changes. Contributions that cancel (an UPDATE
-- that moved nothing) fold to nothing and bump nothing.
create function streamseal._fold_changes(changes streamseal._counted_change[])
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    epoch_deltas streamseal._epoch_delta[];
begin
    perform streamseal._apply_digest_deltas(array(
        select row(c.origin, c.tenant, c.event_type, c.stream_id,
                   pg_catalog.bit_xor(streamseal._h0(c.event_id)),
                   pg_catalog.bit_xor(streamseal._h1(c.event_id)),
                   pg_catalog.sum(c.sign))::streamseal._digest_delta
        from pg_catalog.unnest(_fold_changes.changes) c
        group by c.origin, c.tenant, c.event_type, c.stream_id
        having pg_catalog.bit_xor(streamseal._h0(c.event_id)) <> 0
            or pg_catalog.bit_xor(streamseal._h1(c.event_id)) <> 0
            or pg_catalog.sum(c.sign) <> 0));

    -- Share-lock every lane touched, in origin order, before reading its frontier: a closer
    -- holding a lane exclusively has then committed, and one that comes later sees our rows.
    perform pg_catalog.pg_advisory_xact_lock_shared(streamseal._lane_lock_key(l.origin))
    from (select distinct c.origin from pg_catalog.unnest(_fold_changes.changes) c order by c.origin) l;

    with moved as (
        select c.origin, c.origin_seq / le.width as epoch, c.tenant, c.event_type,
               pg_catalog.bit_xor(streamseal._h0(c.event_id)) as x0,
               pg_catalog.bit_xor(streamseal._h1(c.event_id)) as x1,
               pg_catalog.sum(c.sign) as n
        from pg_catalog.unnest(_fold_changes.changes) c
        join streamseal.lane_epochs le on le.origin = c.origin
        where c.origin_seq < le.closed_through * le.width
        group by c.origin, c.origin_seq / le.width, c.tenant, c.event_type
    ), effective as (
        select m.* from moved m where m.x0 <> 0 or m.x1 <> 0 or m.n <> 0
    )
    select pg_catalog.array_agg(row(f.origin, f.epoch, f.tenant, f.event_type, f.x0, f.x1, f.n)::streamseal._epoch_delta)
    into epoch_deltas
    from effective f;

    if epoch_deltas is not null then
        perform streamseal._apply_epoch_deltas(epoch_deltas);
    end if;
    -- The generation moves where own history changes are recorded (history_changes.sql), for
    -- every change of a stamped own counted event, closed epoch or not.
end
$$;
