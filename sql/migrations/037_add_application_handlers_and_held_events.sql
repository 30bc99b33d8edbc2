-- Projections run by the application (Go, through the feed package) and the ordering audit
-- (issue 19, items 1 and 2; DESIGN.md "Read side", "Coverage").
--
-- Why: a projection written in Go kept no cursor, so the coverage audit could not see that it was
-- born late, skipped a stream or fell short; and a repair that lands below later versions of a
-- stream reached projections after them, folded out of order, with no alarm. The rules are in
-- sql/functions/projections.sql.

-- runs_in: who calls the handler. control_plane: a SQL function `streamseal run` calls
-- (run_handler); application: the application's own process (the Go feed package, or any client
-- keeping the contract of feed_handler_advance), which has no function here. application_reset:
-- an application projection that can reset one stream's state; the coverage audit asks it to
-- (projection_rebuild_requests) instead of calling a reset function.
alter table streamseal.handlers alter column handler drop not null;
alter table streamseal.handlers add column runs_in text not null default 'control_plane'
    constraint handlers_runs_in_is_known check (runs_in in ('control_plane', 'application'));
alter table streamseal.handlers add column application_reset boolean not null default false;
alter table streamseal.handlers add constraint handlers_control_plane_handlers_name_a_function
    check ((runs_in = 'control_plane') = (handler is not null)
           and (runs_in = 'control_plane' or reset is null)
           and (runs_in = 'application' or not application_reset));

-- projection_held: events a projection did not apply because it had already applied a later
-- version of their stream (a repair that filled a hole below them). Held, not folded: the
-- stream's cursor is short, and the coverage audit reports it as out_of_order and rebuilds the
-- stream in stream_version order; the rebuild clears the stream's rows.
create table streamseal.projection_held (
    projection text not null references streamseal.handlers (name) on delete cascade,
    origin text not null,
    tenant text not null,
    stream_id text not null,
    event_id uuid not null,
    event_type text not null,
    stream_version bigint not null,
    applied_version bigint not null,
    held_at timestamptz not null default now(),
    primary key (projection, origin, tenant, stream_id, event_id)
);

-- projection_rebuild_requests: streams the coverage audit asks an application projection to
-- rebuild (it cannot call the application's reset). The application's subscriber takes each in
-- one transaction: its reset, projection_rebuild_replay (the stream's events, its cursors
-- refolded), its handler over them; the row goes with that transaction.
create table streamseal.projection_rebuild_requests (
    projection text not null references streamseal.handlers (name) on delete cascade,
    origin text not null,
    tenant text not null,
    stream_id text not null,
    requested_at timestamptz not null default now(),
    primary key (projection, origin, tenant, stream_id)
);

-- Findings: out_of_order (a stream with held events), and the action requested (an application
-- projection was asked to rebuild the stream).
alter table streamseal.coverage_findings drop constraint coverage_findings_kind_is_known;
alter table streamseal.coverage_findings add constraint coverage_findings_kind_is_known
    check (kind in ('born_late', 'missing', 'short', 'differs', 'out_of_order'));
alter table streamseal.coverage_findings drop constraint coverage_findings_action_is_known;
alter table streamseal.coverage_findings add constraint coverage_findings_action_is_known
    check (action in ('rebuilt', 'would_rebuild', 'deferred', 'no_reset_hook', 'requested'));

---- create above / drop below ----

delete from streamseal.coverage_findings where kind = 'out_of_order' or action = 'requested';
alter table streamseal.coverage_findings drop constraint coverage_findings_action_is_known;
alter table streamseal.coverage_findings add constraint coverage_findings_action_is_known
    check (action in ('rebuilt', 'would_rebuild', 'deferred', 'no_reset_hook'));
alter table streamseal.coverage_findings drop constraint coverage_findings_kind_is_known;
alter table streamseal.coverage_findings add constraint coverage_findings_kind_is_known
    check (kind in ('born_late', 'missing', 'short', 'differs'));
drop table streamseal.projection_rebuild_requests;
drop table streamseal.projection_held;
delete from streamseal.handlers where runs_in = 'application';
alter table streamseal.handlers drop constraint handlers_control_plane_handlers_name_a_function;
alter table streamseal.handlers drop column application_reset;
alter table streamseal.handlers drop column runs_in;
alter table streamseal.handlers alter column handler set not null;
