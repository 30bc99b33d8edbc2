-- Invariant 9 and issue 15 item 4 (report-only is an exact dry run): a dry-run observe
-- (report-only audits) requests an unchanged deficit on exactly the schedule auto-repair would
-- (the same _repair_backoff: at once, then 5, 10, 20, ... minutes, settling at the slowest rung),
-- yet spends no ledger attempt: attempts, next_attempt_at and exhausted_at stay as if nothing
-- had been sent. A dry run's cut request is given back on its own ladder, a changed signature
-- resets it, and switching to auto-repair sends at once what the dry run showed.
begin;
select plan(9);
select streamseal.set_service_name('ledger-dry-run');

-- The same deficit observed every 5 minutes for 48 hours: once for real, once as a dry run.
create temp table cycles (dry_run boolean, minute int, report boolean, request boolean, attempts int, settled boolean) on commit drop;
do $$
declare
    m int;
    dry boolean;
begin
    foreach dry in array array[false, true] loop
        for m in 0 .. 2880 by 5 loop
            insert into cycles
            select dry, m, o.report, o.request, o.attempts, o.settled
            from streamseal.ledger_observe(case when dry then 'ledger-dry-run-dry' else 'ledger-dry-run-real' end,
                                           jsonb_build_array(streamseal_test.divergent_bucket('stuck', 1, 2)),
                                           now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute',
                                           dry_run => dry) o;
        end loop;
    end loop;
end
$$;

select results_eq(
    $$ select minute, attempts from cycles where dry_run and request order by minute $$,
    $$ values (0, 1), (5, 2), (15, 3), (35, 4), (75, 5), (155, 6), (315, 7), (635, 8), (1275, 9), (1915, 10), (2555, 11) $$,
    'a dry run requests at 0, 5, 15, 35, ... then every 640 minutes: 11 in 48 hours, never every round');
select is_empty(
    $$ (select minute, report, request, attempts, settled from cycles where dry_run
        except select minute, report, request, attempts, settled from cycles where not dry_run)
       union all
       (select minute, report, request, attempts, settled from cycles where not dry_run
        except select minute, report, request, attempts, settled from cycles where dry_run) $$,
    'every decision of the dry run is the one auto-repair made on the same damage at the same instant');
select results_eq(
    $$ select attempts, last_attempt_at, next_attempt_at, exhausted_at,
              dry_run_attempts, dry_run_last_attempt_at, dry_run_next_attempt_at - dry_run_last_attempt_at
       from streamseal.repair_ledger where origin = 'ledger-dry-run-dry' and stream_id = 'stuck' $$,
    $$ values (0, null::timestamptz, null::timestamptz, null::timestamptz,
               11, '2030-01-02 18:35:00+00'::timestamptz, interval '640 minutes') $$,
    'the dry run spent no ledger attempt and set no exhaustion; its own ladder holds the 11 requests');
select results_eq(
    $$ select origin, unhealed, exhausted from streamseal.ledger_backlog('2030-01-03 00:00:00+00')
       where origin in ('ledger-dry-run-dry', 'ledger-dry-run-real') order by origin $$,
    $$ values ('ledger-dry-run-dry'::text, 1::bigint, 0::bigint), ('ledger-dry-run-real', 1, 1) $$,
    'the backlog counts the dry run unhealed but not exhausted: no budget was really spent');

-- The per-audit cap cut a dry-run request: it is given back on the dry-run ladder only.
select count(*) from streamseal.ledger_observe('ledger-dry-run-dry', jsonb_build_array(streamseal_test.divergent_bucket('cut', 1, 3)),
    now_at => '2030-02-01 00:00:00+00', dry_run => true);
select is(
    streamseal.ledger_unrequest('ledger-dry-run-dry', '[{"tenant":"t1","event_type":"ledger.type","stream_id":"cut"}]',
                                '2030-02-01 00:00:00+00', dry_run => true),
    1, 'the cut dry-run request is given back');
select results_eq(
    $$ select attempts, dry_run_attempts, dry_run_next_attempt_at from streamseal.repair_ledger
       where origin = 'ledger-dry-run-dry' and stream_id = 'cut' $$,
    $$ values (0, 0, null::timestamptz) $$,
    'the cut bucket has no attempt on either ladder');
select results_eq(
    $$ select request, attempts from streamseal.ledger_observe('ledger-dry-run-dry',
           jsonb_build_array(streamseal_test.divergent_bucket('cut', 1, 3)), now_at => '2030-02-01 00:00:00+00', dry_run => true) $$,
    $$ values (true, 1) $$,
    'at the same instant the dry run records it again, as its attempt 1');

-- A changed signature resets the dry-run ladder as it resets the real one.
select results_eq(
    $$ select request, attempts from streamseal.ledger_observe('ledger-dry-run-dry',
           jsonb_build_array(streamseal_test.divergent_bucket('stuck', 1, 2, 7)), now_at => '2030-01-03 00:00:00+00', dry_run => true) $$,
    $$ values (true, 1) $$,
    'a new signature is news: the dry-run ladder starts again at attempt 1');

-- Switching to auto-repair: the real ladder was never climbed, so the request goes at once.
select results_eq(
    $$ select request, attempts, settled from streamseal.ledger_observe('ledger-dry-run-dry',
           jsonb_build_array(streamseal_test.divergent_bucket('stuck', 1, 2, 7)), now_at => '2030-01-03 00:01:00+00') $$,
    $$ values (true, 1, false) $$,
    'after the dry run, auto-repair sends what the dry run showed at once, as its attempt 1');

select * from finish();
rollback;
