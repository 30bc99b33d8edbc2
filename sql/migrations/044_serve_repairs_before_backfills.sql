-- An origin serves plain repairs before backfills (issue 18's pacing; invariant 14).
--
-- Why: the redelivery queue was served oldest first, one request at a time, and a backfill's
-- (state-only) answer is paced to --backfill-serve-share of the wall time: a few seconds per
-- answer, and a broadcast for a new consumer's history asks for many. A consumer's repair of a
-- lost event accepted behind them waited for all of them. Now it waits at most for the one
-- answer being built. state_only is the request's flag as the server decoded it (Go matches JSON
-- keys case-insensitively, so the server's reading, not a jsonb lookup, is the one to store);
-- requests queued by the previous release take it from their stored body.
alter table streamseal.redelivery_queue add column state_only boolean not null default false;
update streamseal.redelivery_queue q set state_only = true where (q.request ->> 'state_only') = 'true';

-- Builds take repairs first, each kind oldest first.
create index redelivery_queue_by_kind_and_accepted_at
    on streamseal.redelivery_queue (state_only, accepted_at, request_id);
drop index streamseal.redelivery_queue_by_accepted_at;

---- create above / drop below ----

create index redelivery_queue_by_accepted_at on streamseal.redelivery_queue (accepted_at);
drop index streamseal.redelivery_queue_by_kind_and_accepted_at;
alter table streamseal.redelivery_queue drop column state_only;
