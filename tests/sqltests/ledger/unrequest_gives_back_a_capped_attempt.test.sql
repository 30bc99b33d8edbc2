-- Invariant 9: a deficit the per-audit cap cut was never requested, so ledger_unrequest gives
-- its attempt back and it is due at the next audit, not after a backoff; alarm-only rows and
-- unknown buckets are untouched.
begin;
select plan(4);
select streamseal.set_service_name('ledger-unrequest');

create function pg_temp.bucket(stream_id text, local_n bigint, origin_n bigint)
returns jsonb language sql immutable as $$
    select jsonb_build_object('tenant', 't1', 'event_type', 'ledger.type', 'stream_id', stream_id,
        'reason', case when local_n < origin_n then 'deficit' when local_n > origin_n then 'local_extra' else 'identity_mismatch' end,
        'local_x0', 1, 'local_x1', 2, 'local_n', local_n, 'origin_x0', 3, 'origin_x1', 4, 'origin_n', origin_n)
$$;

select count(*) from streamseal.ledger_observe('ledger-unrequest-origin',
    jsonb_build_array(pg_temp.bucket('cut', 1, 3), pg_temp.bucket('extra', 4, 2)), now_at => '2030-01-01 00:00:00+00');

select is(
    streamseal.ledger_unrequest('ledger-unrequest-origin',
        '[{"tenant":"t1","event_type":"ledger.type","stream_id":"cut"},
          {"tenant":"t1","event_type":"ledger.type","stream_id":"extra"},
          {"tenant":"t1","event_type":"ledger.type","stream_id":"nowhere"}]', '2030-01-01 00:00:00+00'),
    1, 'only the requested deficit has an attempt to give back');
select results_eq(
    $$ select attempts, next_attempt_at, last_attempt_at from streamseal.repair_ledger
       where origin = 'ledger-unrequest-origin' and stream_id = 'cut' $$,
    $$ values (0, null::timestamptz, null::timestamptz) $$,
    'the cut deficit is back to no attempt');
select results_eq(
    $$ select stream_id, request, attempts from streamseal.ledger_observe('ledger-unrequest-origin',
           jsonb_build_array(pg_temp.bucket('cut', 1, 3), pg_temp.bucket('extra', 4, 2)), now_at => '2030-01-01 00:00:00+00')
       order by stream_id $$,
    $$ values ('cut'::text, true, 1), ('extra', false, 0) $$,
    'at the same instant the cut deficit is requested again, as attempt 1; the extra never is');
select results_eq(
    $$ select reason, attempts from streamseal.repair_ledger where origin = 'ledger-unrequest-origin' and stream_id = 'extra' $$,
    $$ values ('local_extra'::text, 0) $$,
    'the alarm-only row is untouched');

select * from finish();
rollback;
