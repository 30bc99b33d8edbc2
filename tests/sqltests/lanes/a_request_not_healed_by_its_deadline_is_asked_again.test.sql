-- Invariant 14 (every request reaches an answer) and 9 (storm bounds): a requested range that has
-- not arrived by its deadline is returned to request again, the deadline doubling per attempt
-- (backoff_base 300 s) up to the slowest rung after max_attempts (8), where it stays: asked
-- forever, never faster. A range that arrives leaves requested and the budget resets. Before the
-- deadline nothing is asked twice. A sticky "requested" mark with no deadline turned one lost
-- request into permanent loss (DESIGN.md, lessons from the field).
begin;
select plan(10);
select streamseal.set_service_name('lane-reask');
select streamseal.subscribe_all_tenants(array['reask.type'], 'reask-origin');

-- Announced 1..10; 4 and 5 lost, confirmed by a second checkpoint.
select streamseal.ingest(array(
    select streamseal_test.copy('reask-origin', i, i, 'r1', i, 'reask.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 10) i where i not in (4, 5)));
select streamseal.verify_checkpoint('reask-origin', 1, 11, 'reask.type', array['t1'],
    array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[],
    now_at => '2030-01-01 00:00:00+00');
select streamseal.verify_checkpoint('reask-origin', 11, 11, 'reask.type', array['t1'],
    array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[],
    now_at => '2030-01-01 00:01:00+00');

-- heartbeat(m): a quiet checkpoint at minute m; what it returns to request, and the attempts.
create function pg_temp.heartbeat(m int) returns table (to_request int8multirange, request_attempts int)
language sql as $$
    select v.to_request, v.request_attempts
    from streamseal.verify_checkpoint('reask-origin', 11, 11, 'reask.type', array['t1'],
        array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[],
        now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute') v
$$;

-- The consumer asks at minute 1 (the request is then lost on the way).
select streamseal.mark_requested('reask-origin', 't1', 'reask.type', '{[4,6)}', now_at => '2030-01-01 00:01:00+00');
select results_eq($$ select * from pg_temp.heartbeat(5) $$, $$ values ('{}'::int8multirange, 1) $$,
    'before its deadline (5 minutes after the ask) the range is not asked again');
select results_eq($$ select * from pg_temp.heartbeat(6) $$, $$ values ('{[4,6)}'::int8multirange, 1) $$,
    'at its deadline the unhealed range is returned to request again');

-- Keep re-asking at every deadline for 48 hours: record when the asks go out.
create temp table asks (minute int, attempts int) on commit drop;
insert into asks values (1, 1);
do $$
declare
    m int;
    r record;
begin
    for m in 2 .. 2880 loop
        select * into r from pg_temp.heartbeat(m);
        if not pg_catalog.isempty(r.to_request) then
            perform streamseal.mark_requested('reask-origin', 't1', 'reask.type', r.to_request,
                now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute');
            insert into asks select m, l.request_attempts from streamseal.lanes l where l.origin = 'reask-origin';
        end if;
    end loop;
end
$$;
select results_eq(
    $$ select minute - lag(minute) over (order by minute) from asks order by minute offset 1 limit 9 $$,
    $$ values (5), (10), (20), (40), (80), (160), (320), (640), (640) $$,
    'the waits double from 5 minutes to the slowest rung (640 minutes) and stay there');
select is((select max(attempts) from asks), 11, 'asked 11 times in 48 hours: never silent, never faster');

-- 4 arrives: the budget does not reset while 5 is still missing; then 5 arrives.
select streamseal.ingest(array[streamseal_test.copy('reask-origin', 4, 4, 'r1', 4, 'reask.type', event_id => streamseal_test.uid(4))]);
select results_eq($$ select * from pg_temp.heartbeat(2881) $$, $$ values ('{}'::int8multirange, 11) $$,
    'a partial arrival shrinks the request; the rest keeps its place on the ladder');
select results_eq($$ select requested from streamseal.lanes where origin = 'reask-origin' $$,
    $$ values ('{[5,6)}'::int8multirange) $$, 'only 5 stays requested');
select streamseal.ingest(array[streamseal_test.copy('reask-origin', 5, 5, 'r1', 5, 'reask.type', event_id => streamseal_test.uid(5))]);
select results_eq($$ select * from pg_temp.heartbeat(2882) $$, $$ values ('{}'::int8multirange, 0) $$,
    'once everything arrived the budget resets');
select results_eq(
    $$ select requested, request_attempts, next_request_at from streamseal.lanes where origin = 'reask-origin' $$,
    $$ values ('{}'::int8multirange, 0, null::timestamptz) $$,
    'nothing requested, no deadline');

-- A second gap on a lane that waits for a request joins the wait: no extra attempt is counted.
select streamseal.ingest(array(
    select streamseal_test.copy('reask-origin', i, i, 'r1', i, 'reask.type', event_id => streamseal_test.uid(i))
    from generate_series(11, 14) i where i not in (12, 13)));
select streamseal.verify_checkpoint('reask-origin', 11, 15, 'reask.type', array['t1'],
    array[4]::bigint[], array[11]::bigint[], array[14]::bigint[], array['{}']::int8multirange[],
    now_at => '2030-01-03 00:00:00+00');
select streamseal.verify_checkpoint('reask-origin', 15, 15, 'reask.type', array['t1'],
    array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[],
    now_at => '2030-01-03 00:01:00+00');
select streamseal.mark_requested('reask-origin', 't1', 'reask.type', '{[12,13)}', now_at => '2030-01-03 00:01:00+00');
select streamseal.mark_requested('reask-origin', 't1', 'reask.type', '{[13,14)}', now_at => '2030-01-03 00:02:00+00');
select results_eq(
    $$ select requested, request_attempts, next_request_at from streamseal.lanes where origin = 'reask-origin' $$,
    $$ values ('{[12,14)}'::int8multirange, 1, '2030-01-03 00:06:00+00'::timestamptz) $$,
    'a range added while the lane waits shares the running deadline; only a re-ask counts an attempt');
select throws_ok(
    $$ select streamseal.mark_requested('reask-origin', 't1', 'reask.type', '{[13,14)}', backoff_base => interval '0') $$,
    '22023', 'mark_requested: backoff_base 00:00:00 is invalid: expected a positive interval',
    'a zero backoff is refused');

select * from finish();
rollback;
