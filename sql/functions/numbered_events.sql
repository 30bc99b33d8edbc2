-- numbered_events and own_events: where events are read by origin_seq or type_seq (the relay,
-- checkpoints, redelivery, answers, epochs, close_stream, the feed, applications and tests).
-- Since issue 16 the stamper no longer writes own events' numbers into streamseal.events (there
-- they stay null and the table append-only) but into streamseal.own_numbers (migration 032).
-- Unstamped own events are in neither view: they have no number yet.
--
-- own_events: this service's own numbered events: own_numbers joined to their rows. A predicate
-- on origin_seq or type_seq reads own_numbers by index and events by event_id; one on stream_id
-- reads events by (origin, stream_id, stream_version) and the numbers by local_id (their unique
-- key since migration 047). The join names both keys, and tenant and event_type on both sides,
-- so either way round has its index and a condition on either side reaches both.
create or replace view streamseal.own_events as
select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id,
       e.stream_version, n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
from streamseal.own_numbers n
join streamseal.events e
  on e.event_id = n.event_id and e.local_id = n.local_id
 and e.origin = n.origin and e.tenant = n.tenant and e.event_type = n.event_type;

-- numbered_events: every numbered event of the store, copies (numbers in events) and own events
-- (own_events). A reader of one lane names origin: a copy lane finds nothing in own_numbers by
-- index. FOR UPDATE is not allowed on a UNION: a reader that locks or writes rows selects their
-- event_id here and reaches events by it. A reader of the own lane by stream without a sequence
-- predicate reads own_events instead (the first arm would walk the own rows to discard them).
create or replace view streamseal.numbered_events as
select e.event_id, e.local_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id,
       e.stream_version, e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
from streamseal.events e
where e.origin_seq is not null
union all
select o.event_id, o.local_id, o.origin, o.origin_seq, o.type_seq, o.tenant, o.stream_id,
       o.stream_version, o.event_type, o.flags, o.payload, o.metadata, o.occurred_at, o.stored_at
from streamseal.own_events o;

-- event_numbers: every numbered event's keys without its row: copies' from events, own events'
-- from own_numbers (which carries them). Readers that fold, count or window by number and need
-- no payload (epoch folds, checkpoints, windowed stream digests, unservable ranges, destruction
-- holds) read this: each arm is one index range read, and own events never reach the wide
-- events rows (through numbered_events each would cost a probe of events by event_id).
create or replace view streamseal.event_numbers as
select e.origin, e.origin_seq, e.type_seq, e.event_id, e.tenant, e.event_type, e.stream_id, e.flags
from streamseal.events e
where e.origin_seq is not null
union all
select n.origin, n.origin_seq, n.type_seq, n.event_id, n.tenant, n.event_type, n.stream_id, n.flags
from streamseal.own_numbers n;

-- _own_lane_after returns up to max_events own numbered events with after_seq < origin_seq <=
-- through (through null: no upper bound), of the given event types and tenants (null: any), in
-- origin_seq order: the relay's page (relay.sql) and the feed's own rows (feed.sql).
--
-- It walks own_numbers by its key (origin, origin_seq) from the position and probes events by
-- event_id once per row in scope, whatever the statistics say: O(page) rows of each table. (The
-- own_events view names no origin and lets the planner choose: a table never analyzed after a
-- bulk load got a scan of the whole lane and a hash join for every page, 20 000 rows of each
-- table for a 200-row relay page at 20 000 events.) The probe is a fenced lateral subquery
-- (offset 0), so it stays one primary-key probe per row; sorts, bitmap and sequential scans
-- are off, so the walk is the key's index scan and stops at the page.
create function streamseal._own_lane_after(after_seq bigint, through bigint, event_types text[], tenants text[],
                                           max_events integer)
returns setof streamseal.numbered_events
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set enable_sort = off
set enable_bitmapscan = off
set enable_seqscan = off
-- Planned once per session and kept: PL/pgSQL with a generic plan. Planning the walk and probe
-- on every call (a SQL function with SET clauses is, and so is a custom plan) cost ~1 ms a
-- call, 3x the read itself at the head of the lane, where the relay reads every round. With
-- sorts, bitmap and sequential scans off, the generic plan is the same key walk as a custom one.
set plan_cache_mode = force_generic_plan
as $$
begin
    return query
    select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id, e.stream_version,
           n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
    from streamseal.own_numbers n
    cross join lateral (
        select x.event_id, x.local_id, x.stream_id, x.stream_version, x.flags, x.payload, x.metadata,
               x.occurred_at, x.stored_at
        from streamseal.events x
        where x.event_id = n.event_id
        offset 0
    ) e
    where n.origin = streamseal.service_name()
      and n.origin_seq > _own_lane_after.after_seq
      and (_own_lane_after.through is null or n.origin_seq <= _own_lane_after.through)
      and (_own_lane_after.event_types is null or n.event_type = any (_own_lane_after.event_types))
      and (_own_lane_after.tenants is null or n.tenant = any (_own_lane_after.tenants))
    order by n.origin_seq
    limit _own_lane_after.max_events;
end
$$;
