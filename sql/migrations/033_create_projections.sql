-- Projections and reactors (issue 19; DESIGN.md "Read side", "Coverage").
--
-- Why: the store converging is half the promise. A read model built by a handler that skipped
-- events, or that was registered after the history it should fold, is wrong with no alarm.
-- Handlers registered here read the feed (read_feed) from a stored token; a projection keeps a
-- cursor per bucket, written in the same transaction as its state, folded like stream_digests,
-- so the local coverage audit compares the two (an indexed join) and rebuilds only the streams
-- that fall short. The rules are in sql/functions/projections.sql.

-- handler_event: what a SQL handler receives, one event. A type of the schema (not of the code
-- package, whose install drops its own '_' types with CASCADE): application functions take it as
-- their argument and must survive every migrate. replay: delivered by a rebuild, not the feed.
create type streamseal.handler_event as (
    event_id uuid, origin text, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
    stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
    occurred_at timestamptz, stored_at timestamptz, replay boolean
);

-- handlers: registered projections and reactors. token: where the handler's feed resumes (null:
-- from the beginning of the store). caught_up_at: the start of the last run that found nothing
-- left to read (the coverage audit judges only buckets settled before it). run_error: why the
-- last run of the handler failed as a whole (a refused token, a lost connection), until one
-- succeeds; a handler's own raise is a handler_failures row instead.
create table streamseal.handlers (
    name text primary key
        constraint handlers_name_is_valid check (name ~ '^[a-z][a-z0-9_.-]{0,62}$'),
    kind text not null
        constraint handlers_kind_is_known check (kind in ('projection', 'reactor')),
    event_types text[] not null
        constraint handlers_event_types_are_named check (cardinality(event_types) > 0),
    tenants text[]
        constraint handlers_tenants_are_named check (tenants is null or cardinality(tenants) > 0),
    handler regproc not null,
    reset regproc,
    token text,
    registered_at timestamptz not null default now(),
    born_late boolean not null default false,
    caught_up_at timestamptz,
    applied bigint not null default 0,
    last_run_at timestamptz,
    run_error text,
    run_error_at timestamptz
);

-- projection_cursors: per (projection, bucket), what the projection applied: the count and the
-- XOR of the two hashes of the counted events' ids (as stream_digests folds them: ephemeral and
-- at-most-once events excluded), the highest stream_version and origin_seq applied.
-- rebuilt_snapshot, rebuilt_by: the snapshot a rebuild replayed the stream under and the
-- transaction that ran it; the feed's later delivery of an event visible there (committed in the
-- snapshot, or landed by that transaction itself) is skipped: it was already replayed.
create table streamseal.projection_cursors (
    projection text not null references streamseal.handlers (name) on delete cascade,
    origin text not null,
    tenant text not null,
    event_type text not null,
    stream_id text not null,
    n bigint not null,
    x0 bigint not null,
    x1 bigint not null,
    stream_version bigint,
    origin_seq bigint,
    rebuilt_snapshot pg_snapshot,
    rebuilt_by xid8,
    updated_at timestamptz not null default now(),
    primary key (projection, origin, tenant, event_type, stream_id)
);

-- Whether a projection has rebuilt streams at all: a batch skips the per-event replay check
-- when it has none (the common case).
create index projection_cursors_rebuilt on streamseal.projection_cursors (projection) where rebuilt_snapshot is not null;

-- handler_failures: a stream a handler failed on. The stream waits (its later events park in
-- handler_parked, in feed order) and is retried with backoff; other streams and handlers go on.
create table streamseal.handler_failures (
    handler text not null references streamseal.handlers (name) on delete cascade,
    origin text not null,
    tenant text not null,
    stream_id text not null,
    event_id uuid not null,
    error text not null,
    sqlstate text,
    attempts integer not null default 1,
    first_failed_at timestamptz not null default now(),
    last_failed_at timestamptz not null default now(),
    next_attempt_at timestamptz not null,
    primary key (handler, origin, tenant, stream_id)
);

-- handler_parked: the events of a failed stream the handler has not applied, the failing one
-- first, in the order the feed handed them out (origin_seq as the feed read it).
create table streamseal.handler_parked (
    handler text not null,
    origin text not null,
    tenant text not null,
    stream_id text not null,
    park_seq bigint generated always as identity,
    event_id uuid not null,
    origin_seq bigint,
    primary key (handler, origin, tenant, stream_id, park_seq),
    foreign key (handler, origin, tenant, stream_id)
        references streamseal.handler_failures (handler, origin, tenant, stream_id) on delete cascade
);

-- coverage_findings: what the last coverage audits found, per (projection, bucket), until an
-- audit finds the bucket covered. action: rebuilt, would_rebuild (report-only), deferred (over
-- the cap), no_reset_hook.
create table streamseal.coverage_findings (
    projection text not null references streamseal.handlers (name) on delete cascade,
    origin text not null,
    tenant text not null,
    event_type text not null,
    stream_id text not null,
    kind text not null
        constraint coverage_findings_kind_is_known check (kind in ('born_late', 'missing', 'short', 'differs')),
    store_n bigint not null,
    cursor_n bigint not null,
    action text not null
        constraint coverage_findings_action_is_known check (action in ('rebuilt', 'would_rebuild', 'deferred', 'no_reset_hook')),
    audits integer not null default 1,
    first_found_at timestamptz not null default now(),
    last_found_at timestamptz not null default now(),
    primary key (projection, origin, tenant, event_type, stream_id)
);

---- create above / drop below ----

drop table streamseal.coverage_findings;
drop table streamseal.handler_parked;
drop table streamseal.handler_failures;
drop table streamseal.projection_cursors;
drop table streamseal.handlers;
drop type streamseal.handler_event;
