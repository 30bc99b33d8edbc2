-- Report-only audits keep their own repair ladder (issue 15 item 4): a dry run records each
-- request on the schedule auto-repair would send it (the same _repair_backoff, cap and budget),
-- yet spends no ledger attempt, so `attempts`, `next_attempt_at` and `exhausted_at` keep
-- saying what was really asked. Why columns on repair_ledger rather than a table of their own:
-- the dry-run ladder belongs to the same bucket and the same signature, so a changed signature
-- resets both and a heal (deleting the row) forgets both, with no second key to keep in step.
-- Giving the attempts back instead (one ladder) let every report-only audit record the same
-- requests again with no backoff (commit f23465b).
alter table streamseal.repair_ledger
    add column dry_run_attempts integer not null default 0
        constraint repair_ledger_dry_run_attempts_is_not_negative check (dry_run_attempts >= 0),
    add column dry_run_last_attempt_at timestamptz,
    add column dry_run_next_attempt_at timestamptz;

-- As for the real ladder: only a deficit is ever (even in a dry run) requested.
alter table streamseal.repair_ledger
    add constraint repair_ledger_only_deficits_are_dry_run_requested
        check (reason = 'deficit' or (dry_run_attempts = 0 and dry_run_next_attempt_at is null));

---- create above / drop below ----

alter table streamseal.repair_ledger
    drop constraint repair_ledger_only_deficits_are_dry_run_requested,
    drop column dry_run_next_attempt_at,
    drop column dry_run_last_attempt_at,
    drop column dry_run_attempts;
