-- numbered_events and own_events: where events are read by origin_seq or type_seq (the relay,
-- checkpoints, redelivery, answers, epochs, close_stream, the feed, applications and tests).
-- Since issue 16 the stamper no longer writes own events' numbers into streamseal.events (there
-- they stay null and the table append-only) but into streamseal.own_numbers (migration 032).
-- Unstamped own events are in neither view: they have no number yet.
--
-- own_events: this service's own numbered events: own_numbers joined to their rows by event_id.
-- A predicate on origin_seq or type_seq reads own_numbers by index; one on stream_id reads
-- events by (origin, stream_id, stream_version) and the numbers by event_id. The join names
-- tenant and event_type on both sides so a condition on either reaches both.
create or replace view streamseal.own_events as
select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id,
       e.stream_version, n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
from streamseal.own_numbers n
join streamseal.events e
  on e.event_id = n.event_id and e.origin = n.origin and e.tenant = n.tenant and e.event_type = n.event_type;

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
