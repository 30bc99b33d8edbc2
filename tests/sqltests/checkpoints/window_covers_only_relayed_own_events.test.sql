-- Invariant 1 (and the lesson "an origin's checkpoint counts cover its own lane only"): a
-- checkpoint window covers exactly the own events the relay has published, capped by the relay
-- and by the stamper; copies received from other origins are never counted; at-most-once
-- occurrences (flagged by the real append path) stay out of n but inside first/last and
-- at_most_once; ephemeral events count.
begin;
select plan(6);
select streamseal.set_service_name('ckpt-window');

-- Own lane, appended and stamped in this order (origin_seq 1..8):
--   1 t1 order.placed (type_seq 1)   2 t1 order.placed at-most-once (2)   3 t1 order.placed ephemeral (3)
--   4 t2 order.placed (1)            5 t1 order.shipped (1)               6 t1 order.placed at-most-once (4)
--   7 t1 order.placed (5)            8 t1 order.placed (6)
select streamseal.append(array[
    streamseal_test.own('o1', 1, 'order.placed', 't1', event_id => streamseal_test.uid(1)),
    streamseal_test.own('o1', 2, 'order.placed', 't1', flags => 2, event_id => streamseal_test.uid(2)),
    streamseal_test.own('o1', 3, 'order.placed', 't1', flags => 1, event_id => streamseal_test.uid(3)),
    streamseal_test.own('o2', 1, 'order.placed', 't2', event_id => streamseal_test.uid(4)),
    streamseal_test.own('o3', 1, 'order.shipped', 't1', event_id => streamseal_test.uid(5)),
    streamseal_test.own('o1', 4, 'order.placed', 't1', flags => 2, event_id => streamseal_test.uid(6)),
    streamseal_test.own('o1', 5, 'order.placed', 't1', event_id => streamseal_test.uid(7)),
    streamseal_test.own('o1', 6, 'order.placed', 't1', event_id => streamseal_test.uid(8))]);
select streamseal.stamp();
-- Copies from another origin: same tenant and type (with overlapping origin_seqs and type_seqs),
-- and a type only the other origin emits.
select streamseal.ingest(array[
    streamseal_test.copy('ckpt-window-peer', 1, 1, 'p1', 1, 'order.placed', 't1', event_id => streamseal_test.uid(101)),
    streamseal_test.copy('ckpt-window-peer', 2, 2, 'p1', 2, 'order.placed', 't1', event_id => streamseal_test.uid(102)),
    streamseal_test.copy('ckpt-window-peer', 3, 1, 'p2', 1, 'peer.only', 't1', event_id => streamseal_test.uid(103))]);

select results_eq(
    $$ select origin_seq, type_seq, tenant, event_type, flags from streamseal.numbered_events
       where origin = 'ckpt-window' order by origin_seq $$,
    $$ values (1::bigint, 1::bigint, 't1'::text, 'order.placed'::text, 0), (2, 2, 't1', 'order.placed', 2),
              (3, 3, 't1', 'order.placed', 1), (4, 1, 't2', 'order.placed', 0), (5, 1, 't1', 'order.shipped', 0),
              (6, 4, 't1', 'order.placed', 2), (7, 5, 't1', 'order.placed', 0), (8, 6, 't1', 'order.placed', 0) $$,
    'fixture: append stored the flags and the stamper numbered the own lane as planned');

-- The relay has published through origin_seq 6 of the 8 stamped.
update streamseal.relay_state set published_through = 6;
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (0::bigint, 7::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (0, 7, 't1', 'order.placed', 2, 1, 4, '{[2,3),[4,5)}'),
              (0, 7, 't1', 'order.shipped', 1, 1, 1, '{}'),
              (0, 7, 't2', 'order.placed', 1, 1, 1, '{}') $$,
    'window [0, 7) stops at the relay (the liveness row first): own events only, the ephemeral one counted, the at-most-once ones in first/last and at_most_once but not in n');
select is((select published_through from streamseal.checkpoint_state), 7::bigint,
    'the checkpoint watermark advanced to the window end');

-- The relay reports beyond the stamper (never in practice): the stamper caps the window.
update streamseal.relay_state set published_through = 1000;
select results_eq(
    $$ select * from streamseal.next_checkpoint() $$,
    $$ values (7::bigint, 9::bigint, null::text, null::text, 0::bigint, null::bigint, null::bigint, '{}'::int8multirange),
              (7, 9, 't1', 'order.placed', 2, 5, 6, '{}') $$,
    'window [7, 9) stops at the last stamped origin_seq; quiet pairs are not repeated, the liveness row leads');
select is((select published_through from streamseal.checkpoint_state), 9::bigint,
    'the watermark is the last stamped origin_seq + 1, not the relay''s claim');
select isnt((select published_at from streamseal.checkpoint_state), null,
    'the checkpoint records when it was taken');

select * from finish();
rollback;
