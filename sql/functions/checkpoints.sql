-- Checkpoints on the origin: the checkpoint job (River periodic, every control-plane replica)
-- calls next_checkpoint() in a transaction, publishes one checkpoint message per (tenant, type)
-- with events in the window on that pair's event subject and one liveness beat on the origin's
-- beat subject, then commits. Consumers compare the counts with what they hold
-- (verify_checkpoint, lanes.sql).

-- next_checkpoint takes the next checkpoint window [window_from, window_to) of this origin's own
-- lane and returns what it holds per (tenant, event_type). window_from is where the last window
-- ended; window_to = least(relay published_through, last stamped origin_seq) + 1, so a window
-- covers only what the relay has put on the wire, and never lies below window_from (the
-- watermark never regresses; a quiet window is empty, [from, from)).
--
-- Concurrency: the checkpoint_state row is locked FOR UPDATE SKIP LOCKED and held until the
-- caller commits. When another replica holds it the call returns no rows at all (not an empty
-- window: an empty window published twice would fan identical repairs across the fleet), and the
-- caller publishes nothing this round. Rolling back returns the window to the next caller.
--
-- Rows, own lane only (copies received from other origins are never counted under this
-- service's identity):
--   * first, always exactly one liveness row: null tenant and event_type, n = 0, first and last
--     null, at_most_once empty. The caller publishes it as the origin's beat, so every consumer
--     sees the origin alive each interval whatever its pairs did (silent_origins), and a
--     consumer re-evaluates the lanes of this origin that hold holes on it (two-cycle
--     confirmation and re-asks for quiet pairs).
--   * per (tenant, event_type) with events in the window: n counts the events that are not
--     at-most-once occurrences (ephemeral ones included: the checkpoint window is their only
--     integrity window); first_type_seq and last_type_seq span every event of the pair in the
--     window, at-most-once ones included (type_seqs are dense per pair, so the window holds
--     exactly [first, last] of it); at_most_once is the multirange of the at-most-once
--     occurrences' type_seqs (empty when none), which a consumer accepts instead of calling holes.
--   * nothing for a pair quiet in the window (issue 21 item 3: a round costs the pairs that had
--     events plus one beat, never the pairs ever numbered). A tail loss is still named: the
--     checkpoint of the window that held the lost event rides after it on the same subject.
-- Every row carries the window. Cost: one index range read of the window.
create function streamseal.next_checkpoint()
returns table (window_from bigint, window_to bigint, tenant text, event_type text, n bigint,
               first_type_seq bigint, last_type_seq bigint, at_most_once int8multirange)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- A window can be wide after an outage; compiling JIT code for one aggregate buys nothing.
set jit = off
-- Custom plans always: the window bounds must be visible to the planner so the read walks the
-- (origin, origin_seq) index over exactly the window.
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    from_seq bigint;
    to_seq bigint;
begin
    -- GUARD: one checkpointer at a time; a lost race returns nothing, never an empty window.
    select c.published_through into from_seq
    from streamseal.checkpoint_state c
    for update skip locked;
    if not found then
        return;
    end if;

    select greatest(from_seq, least(r.published_through, s.last_origin_seq) + 1)
    into to_seq
    from streamseal.relay_state r cross join streamseal.stamp_state s;

    update streamseal.checkpoint_state c
    set published_through = to_seq, published_at = pg_catalog.now();

    return query
    with counted as (
        select e.tenant, e.event_type,
               -- Not an at-most-once occurrence (bit 2), spelled as the flag values it allows so
               -- the planner estimates it from statistics (see select_redelivery).
               pg_catalog.count(*) filter (where e.flags in (0, 1, 4, 5)) as n,
               pg_catalog.min(e.type_seq) as first_type_seq,
               pg_catalog.max(e.type_seq) as last_type_seq,
               coalesce(pg_catalog.range_agg(pg_catalog.int8range(e.type_seq, e.type_seq + 1))
                            filter (where e.flags in (2, 3, 6, 7)),
                        '{}'::pg_catalog.int8multirange) as at_most_once
        from streamseal.event_numbers e
        where e.origin = self
          and e.origin_seq >= from_seq
          and e.origin_seq < to_seq
        group by e.tenant, e.event_type
    ), answer as (
        -- The liveness row, every round.
        select null::text as tenant, null::text as event_type, 0::bigint as n, null::bigint as first_type_seq,
               null::bigint as last_type_seq, '{}'::pg_catalog.int8multirange as at_most_once
        union all
        select k.tenant, k.event_type, k.n, k.first_type_seq, k.last_type_seq, k.at_most_once from counted k
    )
    select from_seq, to_seq, a.tenant, a.event_type, a.n, a.first_type_seq, a.last_type_seq, a.at_most_once
    from answer a
    order by a.tenant nulls first, a.event_type;
end
$$;
