-- quarantine: own events a pipeline stage could not process (the relay: a broker that refuses the
-- message, e.g. above its max_payload or a stream's max message size). One such event once held
-- the relay forever and everything behind it with it (invariant 13); now it is set aside here
-- with its reason, the pipeline goes on, and an operator re-queues it once the cause is fixed
-- (requeued_at set: the relay publishes it again and deletes the row on acknowledgement).
create table streamseal.quarantine (
    event_id uuid primary key,
    origin_seq bigint not null,
    stage text not null
        constraint quarantine_stage_is_known check (stage in ('relay')),
    reason text not null
        constraint quarantine_reason_is_not_empty check (reason <> ''),
    quarantined_at timestamptz not null default now(),
    requeued_at timestamptz
);

---- create above / drop below ----

drop table streamseal.quarantine;
