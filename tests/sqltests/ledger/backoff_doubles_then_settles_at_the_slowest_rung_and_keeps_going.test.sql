-- Invariant 9 and "a repair ladder that stops after N attempts goes silent forever": an unchanged
-- deficit is requested first at once, then after 5, 10, 20, ... minutes (backoff_base 300 s,
-- doubling); from max_attempts (8) on the wait stays at the slowest rung (640 minutes) and the
-- bucket keeps being requested and reported, with settled = true telling the caller the budget is
-- spent. Nothing loops fast, and nothing goes silent.
begin;
select plan(9);
select streamseal.set_service_name('ledger-backoff');

-- Observe the same deficit every 5 minutes for 48 hours with the defaults.
create temp table cycles (minute int, report boolean, request boolean, attempts int, settled boolean) on commit drop;
do $$
declare
    m int;
begin
    for m in 0 .. 2880 by 5 loop
        insert into cycles
        select m, o.report, o.request, o.attempts, o.settled
        from streamseal.ledger_observe('ledger-backoff-origin', jsonb_build_array(streamseal_test.divergent_bucket('stuck', 1, 2)),
                                       now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute') o;
    end loop;
end
$$;

select results_eq(
    $$ select minute, attempts from cycles where request order by minute $$,
    $$ values (0, 1), (5, 2), (15, 3), (35, 4), (75, 5), (155, 6), (315, 7), (635, 8), (1275, 9), (1915, 10), (2555, 11) $$,
    'requests go at 0, 5, 15, 35, 75, 155, 315 and 635 minutes, then every 640 minutes: 11 in 48 hours');
select results_eq(
    $$ select minute - lag(minute) over (order by minute) from cycles where request order by minute offset 1 $$,
    $$ values (5), (10), (20), (40), (80), (160), (320), (640), (640), (640) $$,
    'the wait doubles from 5 minutes up to the slowest rung, 5 * 2^7 = 640 minutes, and stays there');
select is_empty(
    $$ select minute from cycles where settled <> (attempts >= 8) $$,
    'settled is false until the 8th attempt and true on every cycle from then on');
select is(
    (select min(minute) from cycles where settled), 635,
    'the budget is spent at the 8th request (minute 635)');
select results_eq(
    $$ select count(*)::int, min(minute), max(minute), count(distinct minute % 60)::int from cycles where report and minute > 635 $$,
    $$ values (38, 660, 2880, 1) $$,
    'after settling it still reports, once every 60 minutes, to the end: never silent');
select results_eq(
    $$ select attempts, last_attempt_at, next_attempt_at - last_attempt_at, exhausted_at
       from streamseal.repair_ledger where origin = 'ledger-backoff-origin' and stream_id = 'stuck' $$,
    $$ values (11, '2030-01-02 18:35:00+00'::timestamptz, interval '640 minutes', '2030-01-01 10:35:00+00'::timestamptz) $$,
    'the row: 11 attempts, the next one a slowest rung after the last, exhausted since the 8th');
select results_eq(
    $$ select origin, unhealed, exhausted from streamseal.ledger_backlog('2030-01-03 00:00:00+00') where origin = 'ledger-backoff-origin' $$,
    $$ values ('ledger-backoff-origin'::text, 1::bigint, 1::bigint) $$,
    'the backlog counts it exhausted: the one number worth an alert');

-- A smaller ladder, by the caller's options: base 60 s, 3 attempts, observed every minute.
select results_eq(
    $$ select m from generate_series(0, 20) m
       cross join lateral streamseal.ledger_observe('ledger-backoff-origin', jsonb_build_array(streamseal_test.divergent_bucket('small', 1, 2)),
           backoff_base => interval '60 seconds', max_attempts => 3,
           now_at => '2030-02-01 00:00:00+00'::timestamptz + m * interval '1 minute') o
       where o.request order by m $$,
    $$ values (0), (1), (3), (7), (11), (15), (19) $$,
    'with base 60 s and 3 attempts the waits are 1, 2, then 4 minutes forever');

-- The longest ladder the control plane accepts (100 attempts on a 24 h base) stays finite: a
-- bucket at attempt 99 is asked again and waits the 100-year cap, not an overflow.
insert into streamseal.repair_ledger (origin, tenant, event_type, stream_id, reason, local_x0, local_x1, local_n,
                                      origin_x0, origin_x1, origin_n, first_seen_at, last_reported_at, attempts,
                                      last_attempt_at, next_attempt_at)
values ('ledger-backoff-origin', 't1', 'ledger.type', 'long', 'deficit', 1000, 2000, 1, 3000, 4000, 2,
        '2030-01-01', '2030-01-01', 99, '2030-01-01', '2030-01-01');
create temp table long_call on commit drop as
select * from streamseal.ledger_observe('ledger-backoff-origin', jsonb_build_array(streamseal_test.divergent_bucket('long', 1, 2)),
                                        backoff_base => interval '24 hours', max_attempts => 100, now_at => '2030-03-01');
select results_eq(
    $$ select c.request, c.attempts, c.settled, l.next_attempt_at - l.last_attempt_at
       from long_call c join streamseal.repair_ledger l
         on l.origin = 'ledger-backoff-origin' and l.stream_id = c.stream_id $$,
    $$ values (true, 100, true, interval '36525 days') $$,
    'attempt 100 of a 24 h ladder waits the 100-year cap: the arithmetic never overflows');

select * from finish();
rollback;
