-- Invariants 1 and 6: the reaper removes ephemeral events past the grace, but an origin reaps its
-- own only once a checkpoint covered them (a consumer could not see the loss of one reaped before
-- that), and never one a redelivery request holds (hold_destruction) until the request is served
-- (release_destruction_hold) or the hold limit passes. A reaped event is answered
-- reaped_ephemeral, by type_seq and by window, never absent.
begin;
select plan(13);
select streamseal.set_service_name('hold-origin');

-- Tenant t1, type 'blip' (ephemeral), stream b1: origin_seq = type_seq = 1..6; 'keep' (not
-- ephemeral) at origin_seq 7.
select streamseal.append(array(
    select streamseal_test.own('b1', i, 'blip', 't1', flags => 1, event_id => streamseal_test.uid(i))
    from generate_series(1, 6) i order by i));
select streamseal.append(array[streamseal_test.own('k1', 1, 'keep', 't1', event_id => streamseal_test.uid(7))]);
select streamseal.stamp();
update streamseal.events set stored_at = now() - interval '2 hours';
update streamseal.relay_state set published_through = 7;

select is(streamseal.reap_ephemeral(interval '1 hour'), 0::bigint,
          'nothing is reaped before a checkpoint covered it, however old');
-- A checkpoint covered [1, 5).
update streamseal.checkpoint_state set published_through = 5;

-- A request for type_seqs 2 and 3 holds them (a consumer's confirmed gap), for an hour.
select is(streamseal.hold_destruction(streamseal_test.uid(100), 'hold-consumer', array['t1'], array['blip'],
              type_seq_ranges => '{[2,4)}', hold_limit => interval '1 hour'), 2::bigint,
          'the request holds the two ephemeral events it names');
select is(streamseal.hold_destruction(streamseal_test.uid(100), 'hold-consumer', array['t1'], array['blip'],
              type_seq_ranges => '{[1,7)}', hold_limit => interval '1 hour'), 0::bigint,
          'the same request id again holds nothing more');
-- A request naming a window holds what it covers, and only ephemeral events.
select is(streamseal.hold_destruction(streamseal_test.uid(101), 'hold-consumer', array['t1'], array['blip', 'keep'],
              from_seq => 4, to_seq => 8, hold_limit => interval '1 hour'), 3::bigint,
          'a window holds its ephemeral events (4, 5, 6), not the others');
select results_eq(
    $$ select request_id, requester, origin_seqs from streamseal.destruction_holds order by request_id $$,
    $$ values (streamseal_test.uid(100), 'hold-consumer'::text, '{[2,4)}'::int8multirange),
              (streamseal_test.uid(101), 'hold-consumer', '{[4,7)}') $$,
    'holds are keyed by the origin_seqs they protect');

select is(streamseal.reap_ephemeral(interval '1 hour'), 1::bigint,
          'the reaper removes only 1: 2..6 are held, and 5, 6 lie beyond the checkpoint anyway');
select results_eq(
    $$ select event_id from streamseal.events order by event_id $$,
    $$ values (streamseal_test.uid(2)), (streamseal_test.uid(3)), (streamseal_test.uid(4)), (streamseal_test.uid(5)),
              (streamseal_test.uid(6)), (streamseal_test.uid(7)) $$,
    'the held events outlive the reaper');

-- The first request is served: its hold goes, and its events are reapable.
select ok(streamseal.release_destruction_hold(streamseal_test.uid(100)), 'serving the request releases its hold');
select is(streamseal.reap_ephemeral(interval '1 hour'), 2::bigint, 'once served, 2 and 3 are reaped');
-- The second hold passes its limit unserved: 4 is reaped (5, 6: no checkpoint yet).
update streamseal.destruction_holds set placed_at = now() - interval '3 hours', expires_at = now() - interval '1 second';
select is(streamseal.reap_ephemeral(interval '1 hour'), 1::bigint, 'past the hold limit, 4 is reaped');
select is_empty($$ select * from streamseal.destruction_holds $$, 'the reaper drops expired holds');

select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['blip'], type_seq_ranges => '{[1,7)}') $$,
    $$ values ('t1'::text, 'blip'::text, 'reaped_ephemeral'::text, '{[1,5)}'::int8multirange, null::int8multirange) $$,
    'by type_seq the reaped events are reaped_ephemeral, not absent');
select results_eq(
    $$ select tenant, event_type, reason, type_seqs, origin_seqs
       from streamseal.redelivery_unservable(array['t1'], array['blip', 'keep'], from_seq => 1, to_seq => 8) $$,
    $$ values ('t1'::text, 'blip'::text, 'reaped_ephemeral'::text, null::int8multirange, '{[1,5)}'::int8multirange) $$,
    'by window too, named with their tenant and type');

select * from finish();
rollback;
