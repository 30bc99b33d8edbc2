-- Invariants 3 and 11 (own lane only): select_redelivery ships only this origin's own stamped
-- events, never a copy received from another origin, in (stream_id, stream_version) order, with
-- every identity field and the payload bytes exactly as stored; unstamped own events wait.
begin;
select plan(8);
select streamseal.set_service_name('redeliver-own');

-- Own events appended out of stream order, each with its own payload bytes; stamped.
select streamseal.append(array[
    streamseal_test.own('s2', 1, payload => '\x0201', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s1', 1, payload => '\x0101', event_id => streamseal_test.uid(2)),
    streamseal_test.own('s3', 1, payload => '\x0301', event_id => streamseal_test.uid(3)),
    streamseal_test.own('s1', 2, payload => '\x0102', event_id => streamseal_test.uid(4)),
    streamseal_test.own('s2', 2, payload => '\x0202', event_id => streamseal_test.uid(5)),
    streamseal_test.own('s1', 3, payload => '\x0103', event_id => streamseal_test.uid(6))]);
select streamseal.stamp();

-- Copies from another origin with the same tenant, type, stream ids and versions, and one in a
-- stream this origin does not have: a selection that leaked the received lane would show them.
select streamseal.ingest(array[
    streamseal_test.copy('other-origin', 1, 1, 's1', 1, event_id => streamseal_test.uid(101)),
    streamseal_test.copy('other-origin', 2, 2, 's0', 1, event_id => streamseal_test.uid(102)),
    streamseal_test.copy('other-origin', 3, 3, 's2', 3, event_id => streamseal_test.uid(103))]);

-- Own events appended after the stamp: stored, not yet numbered.
select streamseal.append(array[
    streamseal_test.own('s0', 1, payload => '\x0001', event_id => streamseal_test.uid(7)),
    streamseal_test.own('s1', 4, payload => '\x0104', event_id => streamseal_test.uid(8))]);

select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['thing.happened']) $$,
    $$ values (streamseal_test.uid(2)), (streamseal_test.uid(4)), (streamseal_test.uid(6)),
              (streamseal_test.uid(1)), (streamseal_test.uid(5)), (streamseal_test.uid(3)) $$,
    'own stamped events come back in (stream_id, stream_version) order, not append order');
select is_empty(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['thing.happened'], from_seq => 0, max_events => 1000)
       where event_id in (streamseal_test.uid(101), streamseal_test.uid(102), streamseal_test.uid(103)) $$,
    'no copy received from another origin is selected, even over the whole history');
select is_empty(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['thing.happened'], array['s0']) $$,
    'a stream only the other origin holds selects nothing');
select is_empty(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['thing.happened'])
       where event_id in (streamseal_test.uid(7), streamseal_test.uid(8)) $$,
    'unstamped own events are not selected');
select results_eq(
    $$ select event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags, payload,
              metadata, occurred_at
       from streamseal.select_redelivery(array['t1'], array['thing.happened']) $$,
    $$ select event_id, origin_seq, type_seq, tenant, stream_id collate "default", stream_version, event_type, flags, payload,
              metadata, occurred_at
       from streamseal.numbered_events where origin = 'redeliver-own' and origin_seq is not null
       order by stream_id, stream_version $$,
    'every selected row carries the stored identity, sequences and payload bytes unchanged');
select results_eq(
    $$ select payload from streamseal.select_redelivery(array['t1'], array['thing.happened'], array['s1']) $$,
    $$ values ('\x0101'::bytea), ('\x0102'::bytea), ('\x0103'::bytea) $$,
    'payload bytes are the appended bytes');

-- Once stamped, the waiting events join the selection in their stream positions.
select streamseal.stamp();
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['thing.happened']) $$,
    $$ values (streamseal_test.uid(7)), (streamseal_test.uid(2)), (streamseal_test.uid(4)), (streamseal_test.uid(6)),
              (streamseal_test.uid(8)), (streamseal_test.uid(1)), (streamseal_test.uid(5)), (streamseal_test.uid(3)) $$,
    'stamped later, they are selected in (stream_id, stream_version) order with the rest');

-- Closing own stream s2 removes origin_seqs 1 and 5; the other origin's copy numbered 1 lives in
-- its own lane and must not make this lane's 1 look present.
select streamseal.close_stream('t1', 's2');
select results_eq(
    $$ select reason, origin_seqs from streamseal.redelivery_unservable(array['t1'], array['thing.happened'], 1, 100) $$,
    $$ values ('absent'::text, '{[1,2), [5,6)}'::int8multirange) $$,
    'unservable numbers are those of the own lane: a copy holding the same origin_seq does not fill it');

select * from finish();
rollback;
