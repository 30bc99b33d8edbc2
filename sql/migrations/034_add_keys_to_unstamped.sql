-- The stamper's queue carries each queued event's keys (issue 16: the write path's cost).
--
-- Why: stamp() claimed its batch from streamseal.unstamped and then probed streamseal.events by
-- event_id for each claimed event, only to read tenant, event_type, stream_id, flags and
-- stored_at: one probe of the wide table per event, about a seventh of a stamp's cost. The insert
-- trigger now queues those keys with the event (it has them in its transition table), the
-- update trigger keeps them in step while the event is unstamped, and the claim (a DELETE …
-- RETURNING, which re-reads a row an UPDATE changed while it waited) returns them: stamp()
-- never reads events. Rows queued by the previous release take their keys from events here.
alter table streamseal.unstamped
    add column tenant text,
    add column event_type text,
    add column stream_id text,
    add column flags integer,
    add column stored_at timestamptz;

update streamseal.unstamped u
set tenant = e.tenant, event_type = e.event_type, stream_id = e.stream_id, flags = e.flags, stored_at = e.stored_at
from streamseal.events e
where e.event_id = u.event_id;

-- A queued row whose event is gone (the previous release dropped such rows at claim): nothing to
-- number.
delete from streamseal.unstamped u where u.tenant is null;

alter table streamseal.unstamped
    alter column tenant set not null,
    alter column event_type set not null,
    alter column stream_id set not null,
    alter column flags set not null,
    alter column stored_at set not null;

---- create above / drop below ----

alter table streamseal.unstamped
    drop column tenant,
    drop column event_type,
    drop column stream_id,
    drop column flags,
    drop column stored_at;
