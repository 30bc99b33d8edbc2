-- The ephemeral lifecycle (issue 15 item 5): an ephemeral event's only integrity window is the
-- checkpoint window, so the maintenance job reaps it after a grace; a confirmed gap on it holds
-- it at the origin until the repair is served; a reaped event is answered as such and accepted
-- as loss with a report, and so is an at-most-once occurrence that never arrived.

-- destruction_holds: on an origin, the ephemeral events a redelivery request named, keyed by
-- their origin_seqs (the origin's own number space), which the reaper skips until the request is
-- served (the row is deleted) or expires_at passes (the hold limit). One row per request id: a
-- request re-sent under the same id holds nothing more.
create table streamseal.destruction_holds (
    request_id uuid primary key,
    requester text not null
        constraint destruction_holds_requester_is_service_name check (requester ~ '^[a-z][a-z0-9-]{0,62}$'),
    origin_seqs int8multirange not null
        constraint destruction_holds_origin_seqs_are_not_empty check (not isempty(origin_seqs)),
    placed_at timestamptz not null default now(),
    expires_at timestamptz not null,
    constraint destruction_holds_expire_after_placed check (expires_at > placed_at)
);

-- reaped_ephemeral: on an origin, per (tenant, event_type), the type_seqs and origin_seqs of own
-- ephemeral events the reaper removed, so a request for one is answered reaped_ephemeral (an
-- accepted loss), not absent (a deletion nobody announced). Multiranges: a run of reaped events
-- is one range, so the row grows with interleaving, not with history.
create table streamseal.reaped_ephemeral (
    tenant text not null,
    event_type text not null
        constraint reaped_ephemeral_event_type_is_not_empty check (event_type <> ''),
    type_seqs int8multirange not null default '{}',
    origin_seqs int8multirange not null default '{}',
    last_reaped_at timestamptz not null default now(),
    primary key (tenant, event_type)
);

-- loss_reports: on a consumer, the record of every loss a lane accepted instead of repairing:
-- at-most-once occurrences that never arrived (reported by the checkpoint that announced them,
-- with its window; never requested), and what an origin answered it cannot serve (reaped
-- ephemeral events, absent, never existed). What `streamseal status` and the loss metrics read.
create table streamseal.loss_reports (
    id bigint generated always as identity primary key,
    reported_at timestamptz not null default now(),
    origin text not null
        constraint loss_reports_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    tenant text not null,
    event_type text not null
        constraint loss_reports_event_type_is_not_empty check (event_type <> ''),
    reason text not null
        constraint loss_reports_reason_is_known
        check (reason in ('at_most_once', 'reaped_ephemeral', 'absent', 'never_existed')),
    type_seqs int8multirange not null
        constraint loss_reports_type_seqs_are_not_empty check (not isempty(type_seqs)),
    n bigint not null
        constraint loss_reports_n_is_positive check (n > 0),
    -- The checkpoint window [window_from, window_to) that announced the loss (null: an origin's answer).
    window_from bigint,
    window_to bigint
);

-- status lists an origin's reports; the metrics sum them per origin and reason.
create index loss_reports_by_origin on streamseal.loss_reports (origin, reason);

-- The reaper reads the oldest ephemeral events first: an index over them alone, so a reap costs
-- the ephemeral events, never a scan of the store.
create index events_ephemeral_by_stored_at on streamseal.events (stored_at) where flags & 1 = 1;

---- create above / drop below ----

drop index streamseal.events_ephemeral_by_stored_at;
drop table streamseal.loss_reports;
drop table streamseal.reaped_ephemeral;
drop table streamseal.destruction_holds;
