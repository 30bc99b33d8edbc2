-- Invariant 14 (every request reaches an answer) and 9 (storm bounds): a lane is not asked again
-- before the origin could have answered. The re-ask deadline is the repair backoff or twice the
-- longest answer time of that origin's recent requests (sent_at to the summary), whichever is
-- longer, never beyond the slowest rung. Found by the fault suite on a loaded machine: a consumer
-- whose answers queued for minutes behind its own inbox re-asked every lane's whole outstanding
-- set at 16, 32, 64 s (base 1 s), each answer adding minutes of duplicates to the queue: 65 622
-- events shipped for 11 958 lost, and no convergence in 3 minutes.
begin;
select plan(6);
select streamseal.set_service_name('lane-rto');
select streamseal.subscribe_all_tenants(array['rto.type'], 'rto-origin');
select streamseal.subscribe_all_tenants(array['rto.type'], 'fast-origin');

-- Announce 1..3 on each origin's lane (so the lanes exist), 2 lost.
select streamseal.verify_checkpoint(o, 1, 4, 'rto.type', array['t1'],
    array[3]::bigint[], array[1]::bigint[], array[3]::bigint[], array['{}']::int8multirange[],
    now_at => '2030-01-01 00:00:00+00')
from unnest(array['rto-origin', 'fast-origin']) o;

-- deadline(origin): seconds from the ask (at 2030-01-01) to the lane's next_request_at.
create function pg_temp.deadline(o text) returns double precision
language sql as $$
    select extract(epoch from l.next_request_at - '2030-01-01 00:00:00+00'::timestamptz)
    from streamseal.lanes l where l.origin = o and l.tenant = 't1' and l.event_type = 'rto.type'
$$;

-- No answer measured yet: the backoff alone (base 1 s, first ask).
select streamseal.mark_requested('rto-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select is(pg_temp.deadline('rto-origin'), 1::double precision,
    'with no answer measured from the origin, the first ask waits the backoff (1 s)');

-- rto-origin's answers took up to 40 s; fast-origin's 0.2 s.
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, answered_at)
select gen_random_uuid(), 'rto-origin', 'checkpoint', '{}', t, t + d * interval '1 second'
from (values (now() - interval '5 minutes', 12), (now() - interval '4 minutes', 40), (now() - interval '3 minutes', 25)) v(t, d);
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, answered_at)
values (gen_random_uuid(), 'fast-origin', 'checkpoint', '{}', now() - interval '1 minute', now() - interval '1 minute' + interval '200 ms');
-- An unanswered request says nothing about the answer time (it may be lost): not a sample.
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at)
values (gen_random_uuid(), 'fast-origin', 'checkpoint', '{}', now() - interval '1 hour');

select streamseal.mark_requested('rto-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select is(pg_temp.deadline('rto-origin'), 80::double precision,
    'a re-ask waits twice the origin''s longest recent answer time (2 x 40 s), not the 2 s rung');

select streamseal.mark_requested('fast-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select is(pg_temp.deadline('fast-origin'), 1::double precision,
    'another origin''s slow answers and an unanswered request do not slow this one: the backoff rules');

-- Answers that took an hour: capped at the slowest rung (1 s x 2^7 = 128 s).
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, answered_at)
values (gen_random_uuid(), 'rto-origin', 'checkpoint', '{}', now() - interval '2 hours', now() - interval '1 hour');
select streamseal.mark_requested('rto-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select is(pg_temp.deadline('rto-origin'), 128::double precision,
    'the wait never exceeds the slowest rung, however slow the answers were');

-- Only the recent answers count: 16 fast answers after the slow ones bring the wait back down.
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, answered_at)
select gen_random_uuid(), 'rto-origin', 'checkpoint', '{}', now() - interval '30 seconds' + i * interval '1 ms',
       now() - interval '30 seconds' + i * interval '1 ms' + interval '100 ms'
from generate_series(1, 16) i;
select streamseal.mark_requested('fast-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select streamseal.mark_requested('rto-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00');
select cmp_ok(pg_temp.deadline('rto-origin'), '<=', 32::double precision,
    'once the origin answers fast again, the backoff rules again (the ladder''s rung, not the old answer time)');

-- A consumer that restarts learns anew: answers a crash held back (prefetched by the dead process,
-- redelivered after the broker's ack wait) say how long the crash lasted, not how fast the origin
-- answers now. Only requests sent since answers_since (the process's start) are samples.
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, answered_at)
values (gen_random_uuid(), 'fast-origin', 'checkpoint', '{}', now() - interval '70 seconds', now());
select streamseal.mark_requested('fast-origin', 't1', 'rto.type', '{[2,3)}', interval '1 second', 8,
    now_at => '2030-01-01 00:00:00+00', answers_since => now() - interval '65 seconds');
select cmp_ok(pg_temp.deadline('fast-origin'), '<', 128::double precision,
    'an answer to a request sent before this process started is not a sample: no 2 x 70 s wait');

select * from finish();
rollback;
