-- Invariants 9 and 10: the ledger refuses what it cannot trust (an origin that is not another
-- service, options that would loop fast or never back off, a batch that is not an array of
-- buckets, a key or digest that is not one, a reason the folds do not show, a bucket named
-- twice) with 22023 and a message naming the bad value. A batch is read whole before anything is
-- written, so a bad bucket anywhere refuses the call.
begin;
select plan(25);
select streamseal.set_service_name('ledger-refusals');

create function pg_temp.b(changes jsonb default '{}') returns jsonb language sql immutable as $$
    select jsonb_build_object('tenant', 't1', 'event_type', 'l.type', 'stream_id', 's1', 'reason', 'deficit',
                              'local_x0', 1, 'local_x1', 2, 'local_n', 1, 'origin_x0', 3, 'origin_x1', 4, 'origin_n', 2) || changes
$$;

-- ledger_observe: origin and options
select throws_ok(
    $$ select * from streamseal.ledger_observe('Ref Origin', jsonb_build_array(pg_temp.b())) $$,
    '22023', 'ledger_observe: origin ''Ref Origin'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'an origin that is not a service name is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ledger-refusals', jsonb_build_array(pg_temp.b())) $$,
    '22023', 'ledger_observe: origin "ledger-refusals" is this service: the ledger tracks copies of other origins'' lanes',
    'this service''s own lane is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b()), cooldown => interval '-1 minute') $$,
    '22023', 'ledger_observe: cooldown -00:01:00 is invalid: expected a non-negative interval',
    'a negative cooldown is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b()), backoff_base => interval '0') $$,
    '22023', 'ledger_observe: backoff_base 00:00:00 is invalid: expected a positive interval',
    'a zero backoff base is refused: requests would never back off');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b()), max_attempts => 0) $$,
    '22023', 'ledger_observe: max_attempts 0 is invalid: expected a positive number of attempts',
    'zero attempts are refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b()), now_at => null) $$,
    '22023', 'ledger_observe: now_at null is invalid: expected a finite time',
    'a missing clock is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b()), now_at => 'infinity') $$,
    '22023', 'ledger_observe: now_at infinity is invalid: expected a finite time',
    'an infinite clock is refused');

-- ledger_observe: the batch
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', null) $$,
    '22023', 'ledger_observe: buckets is null: expected a JSON array of bucket objects',
    'a missing batch is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', pg_temp.b()) $$,
    '22023', 'ledger_observe: buckets is a JSON object: expected a JSON array of bucket objects',
    'a bare bucket is refused: the batch is an array');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', '[5]') $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": 5 is invalid: expected an object',
    'an element that is not an object is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b() - 'tenant')) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": tenant null is invalid: expected a string ('''' for a single-tenant service)',
    'a bucket without a tenant is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"event_type": ""}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": event_type "" is invalid: expected a non-empty string',
    'an empty event type is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"stream_id": 7}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": stream_id 7 is invalid: expected a non-empty string',
    'a stream id that is not a string is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"local_x0": "5"}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": local_x0 "5" is invalid: expected an integer that fits a bigint',
    'a hash given as a string is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"local_x1": 1.5}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": local_x1 1.5 is invalid: expected an integer that fits a bigint',
    'a fractional hash is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"origin_x0": 9223372036854775808}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": origin_x0 9223372036854775808 is invalid: expected an integer that fits a bigint',
    'a hash beyond 64 bits is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"reason": "lost"}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": reason "lost" is invalid: expected deficit, identity_mismatch or local_extra',
    'an unknown reason is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"local_n": -1}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": counts local_n -1, origin_n 2 are invalid: expected n >= 0',
    'a negative count is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"local_n": 3}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": reason ''deficit'' does not match the folds local (1, 2, 3) and origin (3, 4, 2): expected ''local_extra''',
    'a reason the folds do not show is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"local_x0": 3, "local_x1": 4, "local_n": 2}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": folds local (3, 4, 2) and origin (3, 4, 2) agree: expected a divergent bucket',
    'a bucket whose folds agree is refused: it is not a divergence');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b('{"skipped": "no"}'))) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ref-origin": skipped "no" is invalid: expected true, false or nothing',
    'a skipped flag that is not a boolean is refused');
-- The first bucket is good, the second names it again.
select throws_ok(
    $$ select * from streamseal.ledger_observe('ref-origin', jsonb_build_array(pg_temp.b(), pg_temp.b('{"local_n": 0}'))) $$,
    '22023', 'ledger_observe: bucket (tenant ''t1'', event_type ''l.type'', stream_id ''s1'') of origin "ref-origin" appears more than once',
    'a bucket named twice in one batch is refused');

-- ledger_heal and ledger_backlog
select throws_ok(
    $$ select * from streamseal.ledger_heal('ref-origin', null) $$,
    '22023', 'ledger_heal: buckets is null: expected a JSON array of bucket keys',
    'heal refuses a missing batch');
select throws_ok(
    $$ select * from streamseal.ledger_heal('ref-origin', '[{"tenant": "t1", "event_type": "l.type"}]') $$,
    '22023', 'ledger_heal: bucket #1 of origin "ref-origin": stream_id null is invalid: expected a non-empty string',
    'heal refuses a key without a stream: it never heals a whole type by accident');
select throws_ok(
    $$ select * from streamseal.ledger_backlog(null) $$,
    '22023', 'ledger_backlog: now_at null is invalid: expected a finite time',
    'the backlog refuses a missing clock');

select * from finish();
rollback;
