-- relay: what the leading relay (controlplane/relay) reads each round, in one round trip: it
-- stamps what has committed (calling stamp(), unchanged) and returns the stamped own events above
-- the position it has published to, so a commit reaches the wire after one wake-up and one
-- statement instead of a stamper's transaction, a NOTIFY and a second reader's select.

-- relay_page stamps up to stamp_max committed, unstamped own events (none when stamp_max is 0:
-- another stamper numbers them) and returns up to max_events stamped own events with origin_seq
-- above after_seq (the relay_state cursor when null), in origin_seq order. Every row repeats what
-- this call's stamp did (stamped, and the stamper lag oldest_wait_seconds, null when it stamped
-- none); a call that stamped any returns at least one row, since what it numbered lies above
-- every earlier number.
--
-- The rows it stamped are committed only when the statement's transaction commits: a caller
-- publishes them after that (an implicit transaction: after the statement's result is complete).
-- No lower number can commit after the rows are read: stamp() holds its lock to commit, and a
-- batch another stamper committed earlier is visible whole to the page's own snapshot.
create function streamseal.relay_page(after_seq bigint, max_events integer, stamp_max integer default 0)
returns table (
    stamped integer, oldest_wait_seconds double precision,
    event_id uuid, origin text, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
    stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
    occurred_at timestamptz)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the hot path, and custom plans for its own few statements; stamp() and
-- _own_lane_after state their own plan modes (kept plans), so this setting does not reach them.
set jit = off
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    after bigint := relay_page.after_seq;
    stamped_count integer := 0;
    waited double precision;
begin
    if relay_page.max_events is null or relay_page.max_events < 1 then
        raise exception 'relay_page: max_events % is invalid: expected a positive page size', relay_page.max_events
            using errcode = '22023';
    end if;
    if relay_page.stamp_max is null or relay_page.stamp_max < 0 then
        raise exception 'relay_page: stamp_max % is invalid: expected 0 (do not stamp) or a positive batch size', relay_page.stamp_max
            using errcode = '22023';
    end if;
    if after is null then
        select r.published_through into after from streamseal.relay_state r;
    end if;
    if relay_page.stamp_max > 0 then
        select s.stamped, s.oldest_wait_seconds into stamped_count, waited
        from streamseal.stamp(relay_page.stamp_max) s;
    end if;
    -- A fresh snapshot (READ COMMITTED, which stamp() demands): every batch committed before
    -- this call's own stamp took the lock, and this call's own numbers.
    return query
    select stamped_count, waited,
           e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version,
           e.event_type, e.flags, e.payload, e.metadata, e.occurred_at
    -- The page walks own_numbers by its key from the position (_own_lane_after): O(page) rows
    -- whatever the statistics say (through the own_events view, every page read the lane).
    from streamseal._own_lane_after(after, null, null, null, relay_page.max_events) e;
end
$$;
