-- Own events' numbers move out of streamseal.events (issue 16: the write path at the speed of a
-- plain insert).
--
-- Why: the stamper used to UPDATE every own event to set origin_seq and type_seq. Both are
-- indexed, so that update was never HOT: each own event was written twice (a second heap tuple,
-- its index entries, and a dead tuple for vacuum), which cost about as much as the insert itself.
-- Now own events stay in events as appended (origin_seq, type_seq null, append-only); the stamper
-- inserts one narrow row per event here instead. Copies keep their origin's numbers in events.
-- Readers see both through the view streamseal.numbered_events (sql/functions/numbered_events.sql).
--
-- In-place upgrade: own events stamped by an earlier release move their numbers to own_numbers
-- (preserved exactly) and the columns in events are nulled, so an own event's numbers have one
-- place and the own lane's readers one path (a one-off UPDATE of every own event, with the
-- write-path triggers off: it moves no digest; timed in the README). Unstamped own events are
-- queued so the new stamper numbers them; the counters (stamp_state, type_seq_counters) carry on,
-- so no number is reused.

-- own_numbers: the numbers the stamper gave each own event still stored, with the event's keys
-- (event_id, tenant, event_type, stream_id, flags: what folds, checkpoints and windows read), so
-- those readers never reach the wide events rows. origin is always this service's name; it is a
-- column so that a reader of another origin's lane finds nothing here by index. A deleted own
-- event's row goes with it and a flags or stream change follows it (event_triggers.sql); a
-- number is never reused (stamp_state).
create table streamseal.own_numbers (
    origin text not null,
    origin_seq bigint not null
        constraint own_numbers_origin_seq_is_positive check (origin_seq > 0),
    type_seq bigint not null
        constraint own_numbers_type_seq_is_positive check (type_seq > 0),
    event_id uuid not null,
    tenant text not null,
    event_type text not null,
    stream_id text not null,
    flags integer not null,
    primary key (origin, origin_seq),
    constraint own_numbers_event_id unique (event_id),
    constraint own_numbers_type_seq unique (origin, tenant, event_type, type_seq)
);

-- unstamped: the stamper's work queue, one row per own event not numbered yet, filled by the
-- insert trigger in the appending transaction (so a row is visible exactly when its event is
-- committed) and consumed by the stamper. It replaces the partial index events_unstamped, which
-- would now hold every own event forever. A queued event deleted before it was numbered leaves
-- its row here; the stamper finds no event for it and drops it unnumbered.
create table streamseal.unstamped (
    local_id bigint primary key,
    event_id uuid not null
);

-- Queued first: once the numbers below are nulled, "origin_seq is null" no longer tells them apart.
insert into streamseal.unstamped (local_id, event_id)
select e.local_id, e.event_id
from streamseal.events e
where e.origin_seq is null
  and e.origin = (select s.name from streamseal.service s);

insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags)
select e.origin, e.origin_seq, e.type_seq, e.event_id, e.tenant, e.event_type, e.stream_id, e.flags
from streamseal.events e
where e.origin_seq is not null
  and e.origin = (select s.name from streamseal.service s);

-- The triggers exist on a database migrated and installed before (not on a fresh one); the
-- numbers only move, so nothing may fold.
do $upgrade$
begin
    if exists (select from streamseal.own_numbers) then
        alter table streamseal.events disable trigger user;
        update streamseal.events e
        set origin_seq = null, type_seq = null
        where e.origin_seq is not null
          and e.origin = (select s.name from streamseal.service s);
        alter table streamseal.events enable trigger user;
    end if;
end
$upgrade$;

drop index streamseal.events_unstamped;
