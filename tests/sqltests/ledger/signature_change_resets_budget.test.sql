-- Invariant 9: a changed signature is news. When either side's fold of a ledgered bucket moves
-- (repair progress, fresh damage, any one of the six digest values, or the reason), the bucket
-- reports at once, its repair budget restarts (attempts from 0, a deficit is requested now and
-- the ladder starts again at backoff_base) and it is no longer exhausted. It has not healed, so
-- first_seen_at stays.
begin;
select plan(7);
select streamseal.set_service_name('ledger-signature');

create function pg_temp.observe(bucket jsonb, minute int)
returns table (report boolean, request boolean, attempts int, settled boolean) language sql as $$
    select o.report, o.request, o.attempts, o.settled
    from streamseal.ledger_observe('ledger-signature-origin', jsonb_build_array(bucket), backoff_base => interval '60 seconds',
                                   max_attempts => 3, now_at => '2030-01-01 00:00:00+00'::timestamptz + minute * interval '1 minute') o
$$;

-- Spend the budget of a deficit 1 of 5: requests at minutes 0, 1 and 3 (waits 1 and 2 minutes).
select pg_temp.observe(streamseal_test.divergent_bucket('progress', 1, 5), m) from unnest(array[0, 1, 3]) m;
select results_eq(
    $$ select * from pg_temp.observe(streamseal_test.divergent_bucket('progress', 1, 5), 4) $$,
    $$ values (false, false, 3, true) $$,
    'setup: at minute 4 the unchanged deficit is settled after 3 attempts and not due');

-- Repair progress: 3 of 5 held now (a new local fold).
select results_eq(
    $$ select * from pg_temp.observe(streamseal_test.divergent_bucket('progress', 3, 5, salt => 7), 5) $$,
    $$ values (true, true, 1, false) $$,
    'a changed signature reports, requests at once and restarts the budget at attempt 1');
select results_eq(
    $$ select first_seen_at, last_reported_at, next_attempt_at, exhausted_at, local_n
       from streamseal.repair_ledger where origin = 'ledger-signature-origin' and stream_id = 'progress' $$,
    $$ values ('2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:05:00+00'::timestamptz,
               '2030-01-01 00:06:00+00'::timestamptz, null::timestamptz, 3::bigint) $$,
    'the row takes the new signature, restarts the ladder at one backoff_base, is no longer exhausted, keeps first_seen_at');
select results_eq(
    $$ select * from pg_temp.observe(streamseal_test.divergent_bucket('progress', 3, 5, salt => 7), 6) $$,
    $$ values (false, true, 2, false) $$,
    'the unchanged new signature climbs the ladder again from its start (due a minute later, no report)');

-- One digest value alone is a change: the origin's x1 moved.
select results_eq(
    $$ select * from pg_temp.observe(streamseal_test.divergent_bucket('progress', 3, 5, salt => 7) || '{"origin_x1": 4001}', 7) $$,
    $$ values (true, true, 1, false) $$,
    'a change of one hash, counts unchanged, is a new signature too');

-- A change of reason: the deficit turns into an identity mismatch (same counts, other ids).
select results_eq(
    $$ select * from pg_temp.observe(streamseal_test.divergent_bucket('progress', 5, 5, salt => 9), 8) $$,
    $$ values (true, false, 0, false) $$,
    'a deficit that became an identity mismatch reports and is no longer requested');
select results_eq(
    $$ select reason, attempts, next_attempt_at, exhausted_at
       from streamseal.repair_ledger where origin = 'ledger-signature-origin' and stream_id = 'progress' $$,
    $$ values ('identity_mismatch'::text, 0, null::timestamptz, null::timestamptz) $$,
    'the mismatch row carries no attempts and no next attempt');

select * from finish();
rollback;
