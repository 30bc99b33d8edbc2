-- Invariants 1 and 9: the first sighting of a divergent bucket is news. It is ledgered, reported
-- at once, and a deficit is requested at once (attempt 1, next attempt one backoff_base later);
-- an identity mismatch or a local extra is reported but never requested.
begin;
select plan(6);
select streamseal.set_service_name('ledger-first');

create temp table first_call on commit drop as
select * from streamseal.ledger_observe('ledger-first-origin',
    jsonb_build_array(streamseal_test.divergent_bucket('short', 1, 3), streamseal_test.divergent_bucket('other-ids', 2, 2), streamseal_test.divergent_bucket('surplus', 4, 2)),
    now_at => '2030-01-01 00:00:00+00');

select results_eq(
    $$ select stream_id, reason, report, request, attempts, settled from first_call $$,
    $$ values ('other-ids'::text, 'identity_mismatch'::text, true, false, 0, false),
              ('short', 'deficit', true, true, 1, false),
              ('surplus', 'local_extra', true, false, 0, false) $$,
    'every first sighting is reported; only the deficit is requested, as attempt 1');
select results_eq(
    $$ select stream_id, first_seen_at, last_reported_at, attempts, last_attempt_at, next_attempt_at, exhausted_at
       from streamseal.repair_ledger where origin = 'ledger-first-origin' and stream_id = 'short' $$,
    $$ values ('short'::text collate "C", '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:00+00'::timestamptz, 1,
               '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:05:00+00'::timestamptz, null::timestamptz) $$,
    'the deficit''s row: first seen and reported and attempted now, next attempt after the default backoff base of 300 s');
select results_eq(
    $$ select stream_id, attempts, last_attempt_at, next_attempt_at
       from streamseal.repair_ledger where origin = 'ledger-first-origin' and stream_id <> 'short' order by stream_id $$,
    $$ values ('other-ids'::text collate "C", 0, null::timestamptz, null::timestamptz), ('surplus', 0, null, null) $$,
    'the alarm-only rows carry no attempt and no next attempt');
select results_eq(
    $$ select reason, local_x0, local_x1, local_n, origin_x0, origin_x1, origin_n
       from streamseal.repair_ledger where origin = 'ledger-first-origin' and stream_id = 'short' $$,
    $$ values ('deficit'::text, 1000::bigint, 2000::bigint, 1::bigint, 3000::bigint, 4000::bigint, 3::bigint) $$,
    'the row records the signature: the reason and both folds');

-- A comparison's rows feed the ledger unchanged; a skipped (in-flight) row is not observed.
select results_eq(
    $$ select stream_id, report, request, attempts
       from streamseal.ledger_observe('ledger-first-origin',
           jsonb_build_array(streamseal_test.divergent_bucket('fresh', 0, 1) || '{"skipped": false}', streamseal_test.divergent_bucket('in-flight', 0, 1) || '{"skipped": true}'),
           backoff_base => interval '10 seconds', now_at => '2030-01-01 00:00:00+00') $$,
    $$ values ('fresh'::text, true, true, 1) $$,
    'a bucket marked skipped is in flight: it is not news, nothing is ledgered for it');
select results_eq(
    $$ select stream_id, next_attempt_at from streamseal.repair_ledger
       where origin = 'ledger-first-origin' and stream_id in ('fresh', 'in-flight') $$,
    $$ values ('fresh'::text collate "C", '2030-01-01 00:00:10+00'::timestamptz) $$,
    'the first request waits one backoff_base before the next');

select * from finish();
rollback;
