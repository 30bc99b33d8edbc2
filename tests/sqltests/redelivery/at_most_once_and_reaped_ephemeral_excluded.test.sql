-- Invariants 1 and 6: at-most-once occurrences (flagged by the real append path) are never
-- redelivered; an ephemeral event is redelivered while its body is present and, once reaped, is
-- gone from the selection. redelivery_unservable names what a request cannot get, by reason
-- (absent, reaped_ephemeral, at_most_once, never_existed), so the requester records it instead of asking forever.
begin;
select plan(13);
select streamseal.set_service_name('redeliver-flags');

-- Tenant t1, type 'tick', stream s1: type_seq = origin_seq = version = 1..5. Event 2 is an
-- at-most-once occurrence, event 3 ephemeral. Event 6 (type 'tock') and event 7 (tenant t2) are
-- at-most-once too.
select streamseal.append('t1', 's1', 1, 'tick', '\x01'::bytea, event_id => streamseal_test.uid(1));
select streamseal.append('t1', 's1', 2, 'tick', '\x02'::bytea, flags => 2, event_id => streamseal_test.uid(2));
select streamseal.append('t1', 's1', 3, 'tick', '\x03'::bytea, flags => 1, event_id => streamseal_test.uid(3));
select streamseal.append('t1', 's1', 4, 'tick', '\x04'::bytea, event_id => streamseal_test.uid(4));
select streamseal.append('t1', 's1', 5, 'tick', '\x05'::bytea, event_id => streamseal_test.uid(5));
select streamseal.append('t1', 's2', 1, 'tock', '\x06'::bytea, flags => 2, event_id => streamseal_test.uid(6));
select streamseal.append('t2', 's3', 1, 'tick', '\x07'::bytea, flags => 2, event_id => streamseal_test.uid(7));
select streamseal.stamp();

select results_eq(
    $$ select event_id, flags, origin_seq, type_seq from streamseal.numbered_events order by origin_seq $$,
    $$ values (streamseal_test.uid(1), 0, 1::bigint, 1::bigint), (streamseal_test.uid(2), 2, 2, 2),
              (streamseal_test.uid(3), 1, 3, 3), (streamseal_test.uid(4), 0, 4, 4), (streamseal_test.uid(5), 0, 5, 5),
              (streamseal_test.uid(6), 2, 6, 1), (streamseal_test.uid(7), 2, 7, 1) $$,
    'fixture: append stored the flags and the stamper numbered the events as planned');

select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick', 'tock']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(3)), (streamseal_test.uid(4)), (streamseal_test.uid(5)) $$,
    'at-most-once occurrences are never selected; the present ephemeral event is');
select is_empty(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick'], type_seq_ranges => '{[2,3)}') $$,
    'asking for the at-most-once occurrence by its type_seq selects nothing');
select is_empty(
    $$ select * from streamseal.redelivery_unservable(array['t1'], array['tick'], type_seq_ranges => '{[1,2), [3,6)}') $$,
    'a request for servable type_seqs only (the ephemeral one still present) has nothing unservable');

-- Reap the ephemeral event the way the maintenance job does.
update streamseal.events set stored_at = now() - interval '2 hours' where event_id = streamseal_test.uid(3);
update streamseal.checkpoint_state set published_through = 8; -- a checkpoint covered it
select is(streamseal.reap_ephemeral(interval '1 hour'), 1::bigint, 'the reaper removes the aged ephemeral event');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['tick', 'tock']) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(4)), (streamseal_test.uid(5)) $$,
    'once reaped, the ephemeral event is no longer selected');

select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['tick'], type_seq_ranges => '{[1,10)}') $$,
    $$ values ('t1'::text, 'tick'::text, 'at_most_once'::text, '{[2,3)}'::int8multirange, null::int8multirange),
              ('t1', 'tick', 'never_existed', '{[6,10)}', null),
              ('t1', 'tick', 'reaped_ephemeral', '{[3,4)}', null) $$,
    'by type_seq: the reaped one is reaped_ephemeral, the occurrence at_most_once, those beyond the counter never_existed');
select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1', 't9'], array['tock', 'none'], type_seq_ranges => '{[1,3)}') $$,
    $$ values ('t1'::text, 'none'::text, 'never_existed'::text, '{[1,3)}'::int8multirange, null::int8multirange),
              ('t1', 'tock', 'at_most_once', '{[1,2)}', null),
              ('t1', 'tock', 'never_existed', '{[2,3)}', null),
              ('t9', 'none', 'never_existed', '{[1,3)}', null),
              ('t9', 'tock', 'never_existed', '{[1,3)}', null) $$,
    'every requested (tenant, type) is accounted for, a pair without a counter wholly never_existed');
select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['tick'], from_seq => 1, to_seq => 100) $$,
    $$ values ('t1'::text, 'tick'::text, 'at_most_once'::text, null::int8multirange, '{[2,3)}'::int8multirange),
              ('t1', 'tick', 'reaped_ephemeral', null, '{[3,4)}') $$,
    'by window: the reaped origin_seq is reaped_ephemeral (the reaper recorded its type), the requested tenant''s and type''s occurrence at_most_once, nothing past the last stamped');
select results_eq(
    $$ select reason, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['tick', 'tock'], from_seq => 3) $$,
    $$ values ('reaped_ephemeral'::text, '{[3,4)}'::int8multirange), ('at_most_once', '{[6,7)}') $$,
    'a window open above runs to the last stamped origin_seq and starts at from_seq');
select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['tick'], from_seq => 3, to_seq => 10,
                                             type_seq_ranges => '{[1,4)}') $$,
    $$ values ('t1'::text, 'tick'::text, 'reaped_ephemeral'::text, '{[3,4)}'::int8multirange, null::int8multirange),
              ('t1', 'tick', 'reaped_ephemeral', null, '{[3,4)}') $$,
    'window and ranges together: the occurrence at origin_seq 2 lies outside the window and is not reported');
select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['tick'], from_seq => 1, to_seq => 10,
                                             type_seq_ranges => '{[3,6)}') $$,
    $$ values ('t1'::text, 'tick'::text, 'reaped_ephemeral'::text, '{[3,4)}'::int8multirange, null::int8multirange),
              ('t1', 'tick', 'reaped_ephemeral', null, '{[3,4)}') $$,
    'window and ranges together: the occurrence at type_seq 2 lies outside the ranges and is not reported');
select is_empty(
    $$ select * from streamseal.redelivery_unservable(array['t1'], array['tick']) $$,
    'a request naming no numbers has none to report');

select * from finish();
rollback;
