-- Issue 18, invariant 14 (every request reaches an answer): an origin serves a request id once
-- (served_requests drops a replay) and a consumer re-asks a stalled backfill answer's follow-up
-- under its recorded id. When the follow-up was served and only its summary was lost on the way,
-- the re-ask was dropped as a replay and nothing ever answered it: the backfill stayed requested
-- and was re-asked with a WARN forever. served_requests now keeps the summary the origin sent
-- (its JSON body, a few hundred bytes), so a replayed id is answered by that summary again,
-- never rebuilt. Null: served before this migration, or refused/given up (nothing was sent).
alter table streamseal.served_requests add column summary jsonb;

-- streamseal.backfill_reask_stalled reads, per unfinished backfill answer, the latest unanswered
-- follow-up of (backfill, origin): without this it scanned every sent request each poll (plan:
-- a seq scan of 200 000 rows, 17 ms, every Interval). Partial: open follow-ups are few.
create index sent_requests_open_follow_ups on streamseal.sent_requests (backfill, origin, sent_at desc, request_id)
    where source = 'follow_up' and answered_at is null;

---- create above / drop below ----

drop index streamseal.sent_requests_open_follow_ups;
alter table streamseal.served_requests drop column summary;
