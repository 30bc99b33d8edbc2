-- A checkpoint round (every type's message of one publication) is what the per-checkpoint repair
-- cap counts. Quiet rounds repeat their window ([X, X)), so the window cannot name the round: the
-- origin's time of taking the window does, and gap reports record it.
alter table streamseal.gap_reports add column round_at timestamptz;

---- create above / drop below ----

alter table streamseal.gap_reports drop column round_at;
