-- What the wire needs in each service database: who may receive this origin's repair data
-- (grants), which event types this service consumes (subscriptions), where the relay stands,
-- and the inbox's record of messages it could not store.

-- grants: on an origin, the event types each requesting service may receive in redelivery
-- (invariant 11). Nothing is granted by default.
create table streamseal.grants (
    service text not null
        constraint grants_service_is_service_name check (service ~ '^[a-z][a-z0-9-]{0,62}$'),
    event_type text not null
        constraint grants_event_type_is_not_empty check (event_type <> ''),
    granted_at timestamptz not null default now(),
    primary key (service, event_type)
);

-- subscriptions: on a consumer, the event types it consumes, from one origin or from any ('*').
-- The inbox's JetStream filter subjects are derived from these rows.
create table streamseal.subscriptions (
    origin text not null default '*'
        constraint subscriptions_origin_is_service_name_or_any check (origin = '*' or origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    event_type text not null
        constraint subscriptions_event_type_is_not_empty check (event_type <> ''),
    subscribed_at timestamptz not null default now(),
    primary key (origin, event_type)
);

-- relay_state: the highest own origin_seq JetStream acknowledged. The relay resumes above it
-- after a crash; anything re-published below the true position is deduplicated by JetStream's
-- message id window or conflict-skipped by the receiving ingest.
create table streamseal.relay_state (
    singleton boolean primary key default true
        constraint relay_state_is_singleton check (singleton),
    published_through bigint not null default 0,
    updated_at timestamptz not null default now()
);
insert into streamseal.relay_state default values;

-- inbox_rejects: messages the inbox could not store, with the reason, so none is dropped
-- silently. The message is terminated on the wire after it is recorded here.
create table streamseal.inbox_rejects (
    id bigint generated always as identity primary key,
    received_at timestamptz not null default now(),
    subject text not null,
    origin text,
    event_id uuid,
    reason text not null,
    headers jsonb,
    payload bytea
);

---- create above / drop below ----

drop table streamseal.inbox_rejects;
drop table streamseal.relay_state;
drop table streamseal.subscriptions;
drop table streamseal.grants;
