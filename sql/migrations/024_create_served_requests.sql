-- served_requests: on an origin, the redelivery request ids it has served (or given up), so a
-- replayed request is dropped instead of rebuilt (invariant 12: an origin serves a request id
-- once; one replayed 300-byte request shipped 5 000 events again each time). redelivery_queue
-- forgets a request once served, so without this record nothing could tell a replay from a new
-- request. Retention is bounded: rows older than the control plane's retention are pruned as new
-- ones are recorded (served_at index).
create table streamseal.served_requests (
    request_id uuid primary key,
    requester text not null
        constraint served_requests_requester_is_service_name check (requester ~ '^[a-z][a-z0-9-]{0,62}$'),
    served_at timestamptz not null default now()
);

-- Pruning reads the oldest rows first.
create index served_requests_by_served_at on streamseal.served_requests (served_at);

---- create above / drop below ----

drop table streamseal.served_requests;
