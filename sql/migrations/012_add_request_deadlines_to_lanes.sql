-- A requested range had no deadline: lanes.requested stayed set until the range arrived, so a
-- request lost with a crashed origin, a broker outage or a truncated answer was never asked
-- again (invariant 14). request_attempts counts the asks of the lane's outstanding ranges and
-- next_request_at is when they are asked again if still missing (backoff per attempt, like the
-- repair ledger's); both reset once nothing is requested.
alter table streamseal.lanes
    add column request_attempts integer not null default 0
        constraint lanes_request_attempts_is_not_negative check (request_attempts >= 0),
    add column next_request_at timestamptz;

-- Outstanding requests of an upgraded database were asked once, at requested_at.
update streamseal.lanes
set request_attempts = 1, next_request_at = coalesce(requested_at, now())
where requested <> '{}';

---- create above / drop below ----

alter table streamseal.lanes drop column next_request_at, drop column request_attempts;
