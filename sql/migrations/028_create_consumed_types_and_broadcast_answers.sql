-- Backfill on subscription growth (issue 18; DESIGN.md "Consumed types"; the proposal's Phase S).
--
-- Why: a service that starts consuming a type got only what the broker still retained; older
-- history arrived through the daily audit as `deficit` (ERROR, capped, not state-only). The
-- consumed-type registry tells a first start (baseline: nothing existed to miss) from growth
-- (expansion: a type added on a later start or by `subscribe` at run time), records each type's
-- birth (when, and how far each known origin's checkpoints had reached), and tracks the broadcast
-- state-only request that backfills it. The audit reads it to label missing history older than a
-- lane's birth `pending_backfill` instead of `deficit`.

-- consumed_types: one row per event type this service consumes (any origin, any tenant).
-- status: baseline (consumed since the first start: no backfill), pending (an expansion not
-- yet asked for: backfill off, or not sent yet), requested (a broadcast request is out),
-- complete (every origin that answered said it had nothing more).
create table streamseal.consumed_types (
    event_type text primary key
        constraint consumed_types_event_type_is_not_empty check (event_type <> ''),
    status text not null
        constraint consumed_types_status_is_known check (status in ('baseline', 'pending', 'requested', 'complete')),
    first_seen_at timestamptz not null default now(),
    -- Birth: when the type was first consumed, and per known origin the checkpoint window end
    -- (origin_seq) reached then ({"orders": 1234, ...}): history below it predates the consumer.
    born_at timestamptz not null default now(),
    birth_positions jsonb not null default '{}'
        constraint consumed_types_birth_positions_is_object check (jsonb_typeof(birth_positions) = 'object'),
    -- The broadcast request backfilling it (the latest), when it was sent, and when it completed.
    backfill_request uuid,
    requested_at timestamptz,
    completed_at timestamptz
);

-- consumption_baseline: one row once the service's first start recorded its consumption as
-- baseline; every type consumed later is an expansion.
create table streamseal.consumption_baseline (
    singleton boolean primary key default true
        constraint consumption_baseline_is_singleton check (singleton),
    baselined_at timestamptz not null default now()
);

-- A broadcast request (streamseal.ctl._all.<from>) has no single origin: sent_requests records
-- it under the origin '_all', and any origin may answer it, each once (broadcast_answers).
-- Follow-ups of a truncated broadcast answer are directed to the origin that truncated and
-- name the backfill they continue (backfill), so progress is counted per origin.
alter table streamseal.sent_requests drop constraint sent_requests_origin_is_service_name;
alter table streamseal.sent_requests add constraint sent_requests_origin_is_service_name_or_broadcast
    check (origin ~ '^[a-z][a-z0-9-]{0,62}$' or origin = '_all');
alter table streamseal.sent_requests drop constraint sent_requests_source_is_known;
alter table streamseal.sent_requests add constraint sent_requests_source_is_known
    check (source in ('checkpoint', 'audit', 'operator', 'follow_up', 'backfill'));
alter table streamseal.sent_requests add column backfill uuid;

-- broadcast_answers: per backfill (the broadcast's request id) and answering origin, how far it
-- got: events shipped so far, and done once a summary said nothing more (not truncated).
create table streamseal.broadcast_answers (
    backfill uuid not null,
    origin text not null
        constraint broadcast_answers_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    shipped bigint not null default 0,
    done boolean not null default false,
    -- The origin's summary of the broadcast itself came (a second one is a replay).
    answered_broadcast boolean not null default false,
    first_answer_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (backfill, origin)
);

---- create above / drop below ----

drop table streamseal.broadcast_answers;
alter table streamseal.sent_requests drop column backfill;
delete from streamseal.sent_requests where origin = '_all' or source = 'backfill';
alter table streamseal.sent_requests drop constraint sent_requests_source_is_known;
alter table streamseal.sent_requests add constraint sent_requests_source_is_known
    check (source in ('checkpoint', 'audit', 'operator', 'follow_up'));
alter table streamseal.sent_requests drop constraint sent_requests_origin_is_service_name_or_broadcast;
alter table streamseal.sent_requests add constraint sent_requests_origin_is_service_name
    check (origin ~ '^[a-z][a-z0-9-]{0,62}$');
drop table streamseal.consumption_baseline;
drop table streamseal.consumed_types;
