-- Two changes share this migration (one number was free for this work): the report-only
-- dry-run ladder on repair_ledger, and the control plane's role streamseal_control.

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


-- streamseal_control: the role the control plane's login role is granted (by a DBA: `grant
-- streamseal_control to orders_control`) so that `streamseal run` works owning nothing (issue 14
-- item 6): it may run the engine (every function of the code package, the rows of streamseal's
-- tables, River's job tables) but cannot change the schema or the code, truncate, or move the
-- schema version; `streamseal migrate` runs as the owner. What it may do is granted by the code
-- package (sql/functions/privileges.sql, re-applied on every migrate); this migration only makes
-- sure the role exists, as migration 011 does for streamseal_application and for the same reasons
-- (a fresh database must find it; roles are cluster-wide, so concurrent migrations of several
-- databases of one cluster race on its creation; a DBA may create it beforehand).
do $role$
begin
    if not exists (select from pg_catalog.pg_roles r where r.rolname = 'streamseal_control') then
        create role streamseal_control nologin;
        comment on role streamseal_control is
            'streamseal''s control plane (streamseal run): grant it to the control plane''s login role (see the README)';
    end if;
exception
    when duplicate_object or unique_violation then
        null; -- another database of this cluster created it first: it exists, which is all we need
    when insufficient_privilege then
        raise exception 'role streamseal_control does not exist and role "%" may not create roles', current_user
            using errcode = '42501',
                  hint = 'a role with CREATEROLE runs once per cluster: create role streamseal_control nologin;'
                      ' then migrate again';
end
$role$;

---- create above / drop below ----

-- The role is cluster-wide and other databases of the cluster may still use it: rolling this
-- database back takes back what this database granted it and leaves the role itself alone.
do $role$
begin
    if exists (select from pg_catalog.pg_roles r where r.rolname = 'streamseal_control') then
        revoke all on all functions in schema streamseal from streamseal_control;
        revoke all on all tables in schema streamseal from streamseal_control;
        revoke all on all sequences in schema streamseal from streamseal_control;
        revoke all on schema streamseal from streamseal_control;
    end if;
end
$role$;


alter table streamseal.repair_ledger
    drop constraint repair_ledger_only_deficits_are_dry_run_requested,
    drop column dry_run_next_attempt_at,
    drop column dry_run_last_attempt_at,
    drop column dry_run_attempts;
