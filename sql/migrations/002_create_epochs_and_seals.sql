-- Epoch seals, the origin generation and consumer seals: what lets a healthy audit cost the open
-- window instead of the whole history (DESIGN.md "Epochs", "Answers", "Seals").

-- lane_epochs: one row per lane (origin) whose epochs have started closing. Epoch e of a lane
-- covers origin_seq [e * width, (e + 1) * width); epochs [0, closed_through) are closed.
-- The width is pinned when the lane first closes: a later setting must never remap boundaries
-- that answers and seals were already built on.
create table streamseal.lane_epochs (
    origin text primary key,
    width bigint not null
        constraint lane_epochs_width_is_positive check (width > 0),
    closed_through bigint not null default 0
        constraint lane_epochs_closed_through_is_not_negative check (closed_through >= 0),
    -- When the frontier last moved: lanes are visited least-recently-advanced first.
    advanced_at timestamptz not null default now(),
    -- When the next epoch was first found blocked by an unsettled arrival (stall escape).
    blocked_since timestamptz
);

-- digest_epochs: the fold of one closed epoch per (tenant, event_type), same algebra as
-- stream_digests. Kept exact by the write-path triggers when late arrivals or mutations touch a
-- closed epoch; verify_digest_epochs() is the backstop.
create table streamseal.digest_epochs (
    origin text not null,
    epoch bigint not null,
    tenant text not null,
    event_type text not null,
    x0 bigint not null,
    x1 bigint not null,
    n bigint not null,
    primary key (origin, epoch, tenant, event_type)
);

-- sealed_prefix: per lane and (tenant, event_type), the XOR of every closed epoch. A whole-lane
-- answer reads this (one row per bucket) instead of one row per bucket and epoch, so its cost
-- does not grow with history.
create table streamseal.sealed_prefix (
    origin text not null,
    tenant text not null,
    event_type text not null,
    x0 bigint not null,
    x1 bigint not null,
    n bigint not null,
    primary key (origin, tenant, event_type)
);

-- epoch_verify_cursor: where verify_digest_epochs() stopped, so a capped sweep resumes there
-- instead of re-checking epoch 0 forever.
create table streamseal.epoch_verify_cursor (
    singleton boolean primary key default true
        constraint epoch_verify_cursor_is_singleton check (singleton),
    origin text not null,
    epoch bigint not null
);

-- origin_generation: this service's generation, bumped when a legitimate mutation (close_stream,
-- reclassification) changes a fold over its own sealed history. Consumers reset their seal once
-- per change instead of alarming on deliberate history.
create table streamseal.origin_generation (
    singleton boolean primary key default true
        constraint origin_generation_is_singleton check (singleton),
    generation bigint not null default 0,
    bumped_at timestamptz
);
insert into streamseal.origin_generation default values;

-- seals: the consumer's verified watermark per origin: [0, sealed_through) audited complete,
-- under the origin generation recorded with it.
create table streamseal.seals (
    origin text primary key,
    sealed_through bigint not null default 0
        constraint seals_sealed_through_is_not_negative check (sealed_through >= 0),
    generation bigint,
    updated_at timestamptz not null default now()
);

---- create above / drop below ----

drop table streamseal.seals;
drop table streamseal.origin_generation;
drop table streamseal.epoch_verify_cursor;
drop table streamseal.sealed_prefix;
drop table streamseal.digest_epochs;
drop table streamseal.lane_epochs;
