-- Readiness degrades on a confirmed gap only once it has stood longer than a grace (a gap that
-- heals within a cycle must not flip it), so a lane records since when it has held a confirmed
-- gap: set when confirmed turns non-empty, kept while it stays so, cleared when it empties.
-- checked_at and requested_at cannot say it: the one moves every checkpoint, the other only
-- when (and if: report-only never asks) the gap is requested.
alter table streamseal.lanes add column confirmed_since timestamptz;

-- A gap confirmed before the upgrade was confirmed at the latest at its lane's last check.
update streamseal.lanes
set confirmed_since = coalesce(checked_at, now())
where confirmed <> '{}';

alter table streamseal.lanes
    add constraint lanes_confirmed_since_is_set_while_confirmed
        check ((confirmed_since is null) = (confirmed = '{}'));

---- create above / drop below ----

alter table streamseal.lanes drop column confirmed_since;
