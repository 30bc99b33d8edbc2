-- redelivery_queue: on an origin, the redelivery requests it accepted and has not served yet.
-- A request was acknowledged on the broker when it entered an in-memory queue, so an origin that
-- crashed before building it lost it for good (invariant 14); now it is acknowledged once it is
-- here, and removed when its summary is published. attempts counts builds started, so a request
-- whose build keeps failing is given up after a few, not retried forever.
create table streamseal.redelivery_queue (
    request_id uuid primary key,
    requester text not null
        constraint redelivery_queue_requester_is_service_name check (requester ~ '^[a-z][a-z0-9-]{0,62}$'),
    request jsonb not null,
    accepted_at timestamptz not null default now(),
    attempts integer not null default 0
        constraint redelivery_queue_attempts_is_not_negative check (attempts >= 0)
);

-- Builds take the oldest accepted request first.
create index redelivery_queue_by_accepted_at on streamseal.redelivery_queue (accepted_at);

---- create above / drop below ----

drop table streamseal.redelivery_queue;
