-- Own events' numbers are keyed by the event's local_id, not its event_id (issue 16).
--
-- Why: the unique index on own_numbers.event_id took a random uuid per stamped event, so every
-- stamp descended to a random leaf of an index as large as the own lane for each event it
-- numbered: 7 of a stamp's 17 us an event at 700k events (a 10 000-event stamp: 167 ms with it,
-- 97 ms without), and more once that index no longer fits in memory. local_id grows with
-- insertion, so its index is appended at the right edge, and it is as unique per stored event:
-- the unique key that refuses a second number for one event (invariant 7) moves to it. Readers
-- that reach own_numbers from an events row probe it by local_id (the row has it); readers that
-- go the other way reach events by event_id (its primary key) as before.
--
-- In-place upgrade: every number takes its event's local_id (an own event's number row goes
-- with its event, so each finds it; the guard below makes sure), the numbers themselves are
-- untouched. One UPDATE of every own_numbers row: timed in the README.
alter table streamseal.own_numbers add column local_id bigint;

update streamseal.own_numbers n
set local_id = e.local_id
from streamseal.events e
where e.event_id = n.event_id;

do $guard$
declare
    orphan record;
begin
    select n.origin, n.origin_seq, n.event_id into orphan
    from streamseal.own_numbers n
    where n.local_id is null
    limit 1;
    if found then
        raise exception 'migration 047: number % of origin "%" names event %, which is not stored: own_numbers and events disagree; repair the store before upgrading',
            orphan.origin_seq, orphan.origin, orphan.event_id;
    end if;
end
$guard$;

alter table streamseal.own_numbers
    alter column local_id set not null,
    add constraint own_numbers_local_id unique (local_id),
    drop constraint own_numbers_event_id;

---- create above / drop below ----

-- The views over own_numbers join on local_id (sql/functions/numbered_events.sql); the next
-- install re-creates them, and what the cascade takes with them.
drop view if exists streamseal.numbered_events, streamseal.own_events, streamseal.event_numbers cascade;
alter table streamseal.own_numbers
    add constraint own_numbers_event_id unique (event_id),
    drop constraint own_numbers_local_id,
    drop column local_id;
