-- Backfill progress and the at-most-once opt-in (issue 18's remnants).
--
-- Why: progress per origin was "events shipped so far", with no way to say how far that is. An
-- origin now states, in its first answer to a backfill, how many events its whole answer will
-- hold (total), so status and `streamseal backfill` show done/total. And at-most-once
-- occurrences were never backfilled, with no way for a type whose state needs them to ask:
-- backfill_at_most_once lists the types (consumer side) whose backfills include them.

-- total: what the origin said its whole answer to the backfill holds (its first summary's
-- total; null: not said, e.g. an older origin).
alter table streamseal.broadcast_answers add column total bigint
    constraint broadcast_answers_total_is_not_negative check (total >= 0);

-- backfill_at_most_once: event types whose backfill asks origins for their at-most-once
-- occurrences too (state-only, like every backfilled event). Kept apart from consumed_types so
-- an application can opt in before it subscribes (the registry row appears at the reconcile).
create table streamseal.backfill_at_most_once (
    event_type text primary key
        constraint backfill_at_most_once_event_type_is_not_empty check (event_type <> ''),
    opted_in_at timestamptz not null default now()
);

---- create above / drop below ----

drop table streamseal.backfill_at_most_once;
alter table streamseal.broadcast_answers drop column total;
