-- Continuity checkpoints (DESIGN.md "Checkpoints", "Lanes"): the origin's published checkpoint
-- window, and the consumer's per-lane floor with its holes, the origins it has heard from and
-- the durable record of every confirmed gap.
--
-- Why this shape: a consumer that remembers only the highest type_seq it holds cannot tell a
-- late arrival below that mark from a redelivery, and loses it silently (the leapfrog;
-- invariant 6). So a lane keeps a floor that never passes a hole, and the holes themselves, as
-- multiranges of type_seqs that grow only with the damage, never with history.

-- checkpoint_state: the origin's checkpoint watermark, the exclusive end of the last window it
-- checkpointed. One row, locked by next_checkpoint() for the length of the publishing
-- transaction, so several control-plane replicas never publish the same window twice (a lost
-- lock returns nothing, never an empty window). It never regresses.
create table streamseal.checkpoint_state (
    singleton boolean primary key default true
        constraint checkpoint_state_is_singleton check (singleton),
    published_through bigint not null default 0
        constraint checkpoint_state_published_through_is_not_negative check (published_through >= 0),
    published_at timestamptz
);
insert into streamseal.checkpoint_state default values;

-- known_origins: on a consumer, every origin whose checkpoints it has heard, where to send it
-- requests (control_subject: requests go only to an address an origin announced), how often it
-- promised to checkpoint, and when it was last heard. An origin silent for several intervals is
-- a liveness alarm (silent_since marks it once, until it is heard again).
create table streamseal.known_origins (
    origin text primary key
        constraint known_origins_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    control_subject text not null
        constraint known_origins_control_subject_is_not_empty check (control_subject <> ''),
    interval_seconds integer not null
        constraint known_origins_interval_is_positive check (interval_seconds > 0),
    generation bigint
        constraint known_origins_generation_is_not_negative check (generation >= 0),
    last_checkpoint_at timestamptz not null,
    -- The highest window end any checkpoint of the origin carried (monotonic: a redelivered old
    -- checkpoint never moves it back).
    last_window_to bigint not null
        constraint known_origins_last_window_to_is_not_negative check (last_window_to >= 0),
    silent_since timestamptz
);

-- lanes: on a consumer, per (origin, tenant, event_type) it consumes, what it provably holds.
-- Every type_seq <= floor was held when checked, or is accepted; above the floor, a type_seq the
-- origin announced (up to last_type_seq) and the consumer neither holds nor accepted is a hole:
-- suspected after one checkpoint, confirmed after two consecutive ones (stragglers in flight get
-- one cycle), requested once asked for. A hole clears only by its own arrival or by an accepted
-- loss.
-- [1, birth_floor] predates the first checkpoint this consumer saw: history (backfill), never a
-- gap. The multiranges hold type_seqs, half-open ranges, and stay small: they grow with holes.
create table streamseal.lanes (
    origin text not null
        constraint lanes_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    tenant text not null,
    event_type text not null
        constraint lanes_event_type_is_not_empty check (event_type <> ''),
    floor bigint not null
        constraint lanes_floor_is_not_negative check (floor >= 0),
    birth_floor bigint not null
        constraint lanes_birth_floor_is_not_negative check (birth_floor >= 0),
    -- The highest type_seq a checkpoint announced for the lane: how far a quiet checkpoint or an
    -- accepted loss may re-evaluate the lane without a new announcement.
    last_type_seq bigint not null
        constraint lanes_floor_is_announced check (last_type_seq >= floor),
    -- Accepted losses: at-most-once occurrences, reaped ephemeral events, what the origin
    -- cannot serve. Never holes.
    accepted int8multirange not null default '{}',
    suspected int8multirange not null default '{}',
    confirmed int8multirange not null default '{}',
    requested int8multirange not null default '{}',
    requested_at timestamptz,
    born_at timestamptz not null default now(),
    checked_at timestamptz,
    primary key (origin, tenant, event_type),
    constraint lanes_birth_floor_is_below_floor check (birth_floor <= floor)
);

-- gap_reports: the durable record of every confirmed gap and what was done about it, so a
-- restart neither forgets an alarm nor repeats one, and an operator reads exactly what
-- auto-repair did or, in report-only mode, would have done.
create table streamseal.gap_reports (
    id bigint generated always as identity primary key,
    reported_at timestamptz not null default now(),
    origin text not null
        constraint gap_reports_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    tenant text not null,
    event_type text not null
        constraint gap_reports_event_type_is_not_empty check (event_type <> ''),
    type_seqs int8multirange not null
        constraint gap_reports_type_seqs_are_not_empty check (not isempty(type_seqs)),
    window_from bigint,
    window_to bigint,
    action text not null
        constraint gap_reports_action_is_known
        check (action in ('requested', 'would_request', 'withheld', 'waiting_for_cap')),
    request jsonb
);

---- create above / drop below ----

drop table streamseal.gap_reports;
drop table streamseal.lanes;
drop table streamseal.known_origins;
drop table streamseal.checkpoint_state;
