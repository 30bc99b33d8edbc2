-- Invariants 9 and 6: a confirmed hole is returned to request until it is marked requested, then
-- never again while the request is outstanding (no request storm across checkpoints); a hole
-- confirmed later is requested alone; a requested range that arrives, in part or whole, leaves
-- requested and confirmed.
begin;
select plan(8);
select streamseal.set_service_name('lane-requested');
select streamseal.subscribe_all_tenants(array['req.type'], 'req-origin');

-- Announced 1..10; 4 and 5 lost.
select streamseal.ingest(array(
    select streamseal_test.copy('req-origin', i, i, 'r1', i, 'req.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 10) i where i not in (4, 5)));
select streamseal.verify_checkpoint('req-origin', 1, 11, 'req.type', array['t1'],
    array[10]::bigint[], array[1]::bigint[], array[10]::bigint[], array['{}']::int8multirange[]);
select results_eq(
    $$ select to_request from streamseal.verify_checkpoint('req-origin', 11, 11, 'req.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('{[4,6)}'::int8multirange) $$,
    'the confirmed hole 4..5 is returned to request');

-- The repair path asks, records the gap and marks the range requested.
select streamseal.mark_requested('req-origin', 't1', 'req.type', '{[4,6)}');
select results_eq(
    $$ select requested, requested_at is not null from streamseal.lanes where origin = 'req-origin' $$,
    $$ values ('{[4,6)}'::int8multirange, true) $$,
    'mark_requested records the range and when it was asked for');
create temp table report on commit drop as
select streamseal.record_gap('req-origin', 't1', 'req.type', '{[4,6)}', 11, 11, 'requested',
                             '{"type_seq_ranges": [[4, 6]]}') as id;
select results_eq(
    $$ select r.origin, r.tenant, r.event_type, r.type_seqs, r.window_from, r.window_to, r.action, r.request
       from streamseal.gap_reports r join report on report.id = r.id $$,
    $$ values ('req-origin'::text, 't1'::text, 'req.type'::text, '{[4,6)}'::int8multirange, 11::bigint, 11::bigint,
               'requested'::text, '{"type_seq_ranges": [[4, 6]]}'::jsonb) $$,
    'record_gap keeps the durable record of the confirmed gap and the request, under the id it returns');
select results_eq(
    $$ select confirmed, to_request from streamseal.verify_checkpoint('req-origin', 11, 11, 'req.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('{[4,6)}'::int8multirange, '{}'::int8multirange) $$,
    'while the request is outstanding the hole stays confirmed but is not returned to request again');

-- 13 is lost in the next window and confirmed by the one after.
select streamseal.ingest(array(
    select streamseal_test.copy('req-origin', i, i, 'r1', i, 'req.type', event_id => streamseal_test.uid(i))
    from generate_series(11, 14) i where i <> 13));
select streamseal.verify_checkpoint('req-origin', 11, 15, 'req.type', array['t1'],
    array[4]::bigint[], array[11]::bigint[], array[14]::bigint[], array['{}']::int8multirange[]);
select results_eq(
    $$ select confirmed, newly_confirmed, to_request from streamseal.verify_checkpoint('req-origin', 15, 15, 'req.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values ('{[4,6),[13,14)}'::int8multirange, '{[13,14)}'::int8multirange, '{[13,14)}'::int8multirange) $$,
    'a hole confirmed later is requested alone, not together with the outstanding one');

-- The repair delivers 4 only.
select streamseal.ingest(array[streamseal_test.copy('req-origin', 4, 4, 'r1', 4, 'req.type', event_id => streamseal_test.uid(4))]);
select results_eq(
    $$ select floor, confirmed, to_request from streamseal.verify_checkpoint('req-origin', 15, 15, 'req.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (4::bigint, '{[5,6),[13,14)}'::int8multirange, '{[13,14)}'::int8multirange) $$,
    'the arrived 4 leaves confirmed and the floor moves to it; 5 is still outstanding, not re-requested');
select results_eq(
    $$ select requested from streamseal.lanes where origin = 'req-origin' $$,
    $$ values ('{[5,6)}'::int8multirange) $$,
    'the healed part leaves requested');

-- Then 5 and 13 arrive.
select streamseal.ingest(array[
    streamseal_test.copy('req-origin', 5, 5, 'r1', 5, 'req.type', event_id => streamseal_test.uid(5)),
    streamseal_test.copy('req-origin', 13, 13, 'r1', 13, 'req.type', event_id => streamseal_test.uid(13))]);
select streamseal.verify_checkpoint('req-origin', 15, 15, 'req.type', array['t1'],
    array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]);
select results_eq(
    $$ select floor, confirmed, requested from streamseal.lanes where origin = 'req-origin' $$,
    $$ values (14::bigint, '{}'::int8multirange, '{}'::int8multirange) $$,
    'once everything arrived nothing is confirmed or requested and the floor reaches 14');

select * from finish();
rollback;
