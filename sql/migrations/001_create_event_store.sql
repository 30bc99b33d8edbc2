-- The event store, the service's name for itself, and the stamper's counters.
--
-- Why this shape: own events are appended unstamped (origin_seq null) and numbered later by the
-- commit-order stamper, because a sequence taken at insert time lets a transaction that commits
-- later hold a lower number than one already published (DESIGN.md invariant 7). Copies from other
-- origins arrive already numbered by their origin and keep those numbers (invariant 3).

-- service: the one name this database answers to. One row, set once, never renamed: every
-- origin field in every other store refers to it.
create table streamseal.service (
    singleton boolean primary key default true
        constraint service_is_singleton check (singleton),
    name text not null
        constraint service_name_is_valid check (name ~ '^[a-z][a-z0-9-]{0,62}$'),
    named_at timestamptz not null default now()
);

-- events: own events and copies of other origins' events, one row per event id.
--
-- flags bits: 1 ephemeral, 2 at-most-once occurrence, 4 state-only (backfill). Ephemeral and
-- at-most-once events stay outside every digest; unknown bits are refused.
create table streamseal.events (
    event_id uuid primary key,
    -- local_id orders a stamper batch by insertion, so one transaction's events keep their
    -- append order in origin_seq. It means nothing outside this database.
    local_id bigint generated always as identity,
    origin text not null
        constraint events_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    origin_seq bigint
        constraint events_origin_seq_is_positive check (origin_seq > 0),
    type_seq bigint
        constraint events_type_seq_is_positive check (type_seq > 0),
    tenant text not null,
    stream_id text not null,
    stream_version bigint not null,
    event_type text not null
        constraint events_event_type_is_not_empty check (event_type <> ''),
    flags integer not null default 0
        constraint events_flags_are_known check (flags & ~7 = 0),
    payload bytea not null,
    metadata jsonb,
    occurred_at timestamptz not null default now(),
    stored_at timestamptz not null default now(),
    stamped_at timestamptz,
    -- A stamped event carries both sequences or neither.
    constraint events_sequences_stamped_together check ((origin_seq is null) = (type_seq is null))
);

-- Unique per origin: the lane's sequence is the event's identity on the wire and in every window.
create unique index events_origin_origin_seq on streamseal.events (origin, origin_seq);

-- A stream belongs to one origin and its versions are unique there: applications get optimistic
-- concurrency from it, and redelivery pages on (stream_id, stream_version) need a strict order.
create unique index events_stream_version on streamseal.events (origin, stream_id, stream_version);

-- The stamper's work queue: only unstamped own events have a null origin_seq, so this index holds
-- exactly the backlog and stays small however large the store grows.
create index events_unstamped on streamseal.events (local_id) where origin_seq is null;

-- stamp_state: the last origin_seq handed out. A counter, not max(origin_seq), because deleting
-- the newest event (close_stream, reaping) must never let the stamper reuse its number.
create table streamseal.stamp_state (
    singleton boolean primary key default true
        constraint stamp_state_is_singleton check (singleton),
    last_origin_seq bigint not null default 0
);
insert into streamseal.stamp_state default values;

-- type_seq_counters: the last type_seq handed out per (tenant, event_type) of the own lane.
create table streamseal.type_seq_counters (
    tenant text not null,
    event_type text not null,
    last_type_seq bigint not null,
    primary key (tenant, event_type)
);

-- stream_digests: per (origin, tenant, event_type, stream_id) bucket, the XOR of two 64-bit hashes
-- of each counted event id and the count. Kept exact by the triggers in sql/functions/digest.sql.
-- A bucket whose last event was removed keeps its row at (0, 0, 0): updated_at still tells a
-- comparison that the bucket moved recently.
create table streamseal.stream_digests (
    origin text not null,
    tenant text not null,
    event_type text not null,
    stream_id text not null,
    x0 bigint not null,
    x1 bigint not null,
    n bigint not null,
    updated_at timestamptz not null default now(),
    primary key (origin, tenant, event_type, stream_id)
);

-- Row shapes the public bulk functions take: append(new_event[]) and ingest(event_copy[]).
-- They are contract, like tables: Go binds to their OIDs, so they live here and stay put across
-- code-package installs. SQL callers build them with row(...)::streamseal.new_event.

-- new_event: one own event for append(). event_id may be null (a random uuid is assigned);
-- flags null means 0. Bits: 1 ephemeral, 2 at-most-once occurrence, 4 state-only.
create type streamseal.new_event as (
    event_id uuid,
    tenant text,
    stream_id text,
    stream_version bigint,
    event_type text,
    flags integer,
    payload bytea,
    metadata jsonb,
    occurred_at timestamptz
);

-- event_copy: one copy of another origin's event for ingest(), identity fields included.
create type streamseal.event_copy as (
    event_id uuid,
    origin text,
    origin_seq bigint,
    type_seq bigint,
    tenant text,
    stream_id text,
    stream_version bigint,
    event_type text,
    flags integer,
    payload bytea,
    metadata jsonb,
    occurred_at timestamptz
);

---- create above / drop below ----

drop type streamseal.event_copy;
drop type streamseal.new_event;
drop table streamseal.stream_digests;
drop table streamseal.type_seq_counters;
drop table streamseal.stamp_state;
drop table streamseal.events;
drop table streamseal.service;
