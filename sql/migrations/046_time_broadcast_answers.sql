-- Time each origin's summary of a backfill's broadcast (invariants 12 and 14).
--
-- Why: replicas of one consumer share the control durable, so one replica can handle an answer's
-- summary while another has not stored the bundles fetched ahead of it yet. The summary closed
-- the request at once and every late bundle was dropped as 'replayed' (a chaos run with two
-- replicas per service: up to 567 events a run asked for again, a checkpoint interval each).
-- check_redelivery_answer (sql/functions/sent_requests.sql) now still stores a bundle handled
-- less than a grace after its request was answered; a directed request has its answer time
-- (sent_requests.answered_at), a broadcast is answered per origin and had only a flag.
-- answered_broadcast_at is the database's now() when answered_broadcast became true. Null on a
-- row answered before this migration: its answer time is unknown, so no grace (a late bundle of
-- it stays 'replayed', as before).
alter table streamseal.broadcast_answers
    add column answered_broadcast_at timestamptz,
    add constraint broadcast_answers_answer_time_only_when_answered
        check (answered_broadcast_at is null or answered_broadcast);

---- create above / drop below ----

alter table streamseal.broadcast_answers
    drop constraint broadcast_answers_answer_time_only_when_answered,
    drop column answered_broadcast_at;
