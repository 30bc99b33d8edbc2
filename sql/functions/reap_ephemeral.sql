-- reap_ephemeral: the maintenance job's reaper for ephemeral events, whose integrity window is
-- only the checkpoint window. Ephemeral events are outside every digest, so reaping moves no
-- fold; the DELETE trigger proves that rather than assuming it. An origin records what it reaped
-- of its own lane (reaped_ephemeral) so a later request is answered reaped_ephemeral, not absent.

-- _latest_ranges keeps the highest n ranges of a multirange and drops everything below them.
create function streamseal._latest_ranges(ranges int8multirange, n integer)
returns int8multirange
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select case when c.cutoff is null then _latest_ranges.ranges
                else _latest_ranges.ranges - pg_catalog.int8multirange(pg_catalog.int8range(null, c.cutoff)) end
    from (select (select pg_catalog.lower(r) from pg_catalog.unnest(_latest_ranges.ranges) r
                  order by pg_catalog.lower(r) desc offset _latest_ranges.n - 1 limit 1) as cutoff) c
$$;

-- reaped_ranges_kept bounds the ranges reaped_ephemeral keeps per (tenant, type) and column: a
-- type mixing ephemeral and ordinary events, and every type's origin_seqs (other types interleave),
-- add a range per run of reaped events. Older numbers fall out and are answered absent, still an
-- accepted loss at the consumer (measured: at 20000 ranges a reap took ~1.2 s rewriting the row).
create function streamseal._reaped_ranges_kept()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 1000 $$;

-- reap_ephemeral deletes up to max_events ephemeral events stored longer ago than older_than (the
-- grace), oldest first, and returns how many it removed. Copies received from other origins go
-- at the grace. This service's own events go only once a published checkpoint window covered
-- them (below checkpoint_state.published_through: a consumer can see their loss only through a
-- checkpoint, and the relay has shipped them), and never while a destruction hold names their
-- origin_seq (destruction_holds.sql: a consumer's repair request waits for them). Holds past
-- their limit are dropped first.
create function streamseal.reap_ephemeral(older_than interval, max_events integer default 10000)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- Custom plans always: a generic plan for these range predicates may pick a sequential scan
-- that costs the whole store (measured: an idle close_epochs went from 0.3 ms to 31 ms at 300k rows).
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    covered bigint;
    removed bigint;
begin
    if reap_ephemeral.older_than is null or reap_ephemeral.older_than < interval '0' then
        raise exception 'reap_ephemeral: older_than % is invalid: expected a non-negative interval', reap_ephemeral.older_than
            using errcode = '22023';
    end if;
    if reap_ephemeral.max_events is null or reap_ephemeral.max_events < 1 then
        raise exception 'reap_ephemeral: max_events % is invalid: expected a positive batch size', reap_ephemeral.max_events
            using errcode = '22023';
    end if;

    delete from streamseal.destruction_holds h where h.expires_at <= pg_catalog.now();
    select c.published_through into covered from streamseal.checkpoint_state c;

    with doomed as (
        -- Walks the events_ephemeral_by_stored_at index: the cost is the ephemeral events, not the store.
        -- Own events' numbers are in own_numbers (issue 16); an unstamped one has none and stays.
        -- Reached by a local_id probe per ephemeral event, fenced (offset 0): never a join the
        -- planner may turn into a read of the whole own_numbers table.
        select r.event_id, coalesce(r.origin_seq, n.origin_seq) as origin_seq, coalesce(r.type_seq, n.type_seq) as type_seq
        from streamseal.events r
        left join lateral (
            select x.origin_seq, x.type_seq from streamseal.own_numbers x
            where r.origin = self and x.local_id = r.local_id
            offset 0
        ) n on true
        where r.flags & 1 = 1
          and r.stored_at < pg_catalog.now() - reap_ephemeral.older_than
          and (r.origin <> self
               or (n.origin_seq < covered
                   and not exists (select from streamseal.destruction_holds h
                                   where h.origin_seqs @> n.origin_seq)))
        order by r.stored_at
        limit reap_ephemeral.max_events
    ), gone as (
        delete from streamseal.events e
        using doomed d
        where e.event_id = d.event_id
        returning e.origin, e.tenant, e.event_type, d.type_seq, d.origin_seq
    ), own as (
        select g.tenant, g.event_type,
               pg_catalog.range_agg(pg_catalog.int8range(g.type_seq, g.type_seq + 1)) as type_seqs,
               pg_catalog.range_agg(pg_catalog.int8range(g.origin_seq, g.origin_seq + 1)) as origin_seqs
        from gone g
        where g.origin = self
        group by g.tenant, g.event_type
    ), recorded as (
        insert into streamseal.reaped_ephemeral as x (tenant, event_type, type_seqs, origin_seqs)
        select o.tenant, o.event_type, streamseal._latest_ranges(o.type_seqs, streamseal._reaped_ranges_kept()),
               streamseal._latest_ranges(o.origin_seqs, streamseal._reaped_ranges_kept())
        from own o
        order by o.tenant, o.event_type
        on conflict (tenant, event_type) do update
            set type_seqs = streamseal._latest_ranges(x.type_seqs + excluded.type_seqs, streamseal._reaped_ranges_kept()),
                origin_seqs = streamseal._latest_ranges(x.origin_seqs + excluded.origin_seqs, streamseal._reaped_ranges_kept()),
                last_reaped_at = pg_catalog.now()
    )
    select pg_catalog.count(*) into removed from gone;
    return removed;
end
$$;
