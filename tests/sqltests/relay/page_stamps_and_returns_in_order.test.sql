-- Invariants 7 and 1: relay_page, the leading relay's one round trip, stamps what has committed
-- with stamp()'s numbering and returns the stamped own events above the position given (the
-- cursor when none), in origin_seq order, never a copy of another origin's event, never an
-- unstamped one.
begin;
select plan(9);
select streamseal.set_service_name('relay-page');

select streamseal.append(array[streamseal_test.own('s', 1, event_id => streamseal_test.uid(1)),
                               streamseal_test.own('s', 2, event_id => streamseal_test.uid(2))]);
select streamseal.stamp();
select streamseal.ingest(array[streamseal_test.copy('peer', 1, 1, 'p', 1, event_id => streamseal_test.uid(50))]);
select streamseal.append(array[streamseal_test.own('s', 3, event_id => streamseal_test.uid(3)),
                               streamseal_test.own('t', 1, 'other.type', event_id => streamseal_test.uid(4))]);

select results_eq(
    $$ select stamped, event_id, origin_seq from streamseal.relay_page(null, 10, 0) $$,
    $$ values (0, streamseal_test.uid(1), 1::bigint), (0, streamseal_test.uid(2), 2::bigint) $$,
    'without stamping: the stamped own events above the cursor, not the unstamped ones, not the copy');

select results_eq(
    $$ select stamped, event_id, origin_seq, type_seq, oldest_wait_seconds is not null from streamseal.relay_page(1, 10, 100) $$,
    $$ values (2, streamseal_test.uid(2), 2::bigint, 2::bigint, true),
              (2, streamseal_test.uid(3), 3::bigint, 3::bigint, true),
              (2, streamseal_test.uid(4), 4::bigint, 1::bigint, true) $$,
    'stamping: the committed events numbered as stamp() numbers them, returned with the page above the position given');
select is((select last_origin_seq from streamseal.stamp_state), 4::bigint, 'the stamp is stamp()''s: its state moved');

select results_eq(
    $$ select stamped, origin_seq, oldest_wait_seconds from streamseal.relay_page(4, 10, 100) $$,
    $$ select 0, 0::bigint, 0::float8 where false $$,
    'nothing new: no rows');

update streamseal.relay_state set published_through = 3;
select results_eq($$ select origin_seq from streamseal.relay_page(null, 10, 100) $$, $$ values (4::bigint) $$,
    'a null position starts at the relay cursor');
select results_eq($$ select origin_seq from streamseal.relay_page(0, 2, 0) $$, $$ values (1::bigint), (2::bigint) $$,
    'max_events caps the page');
select results_eq($$ select payload, tenant, stream_id, stream_version, event_type from streamseal.relay_page(3, 1, 0) $$,
    $$ select payload, tenant, stream_id collate "default", stream_version, event_type from streamseal.events where event_id = streamseal_test.uid(4) $$,
    'a row carries the stored event');

select throws_ok($$ select * from streamseal.relay_page(0, 0, 0) $$, '22023',
    'relay_page: max_events 0 is invalid: expected a positive page size', 'an empty page size is refused');
select throws_ok($$ select * from streamseal.relay_page(0, 10, -1) $$, '22023',
    'relay_page: stamp_max -1 is invalid: expected 0 (do not stamp) or a positive batch size', 'a negative stamp batch is refused');

select * from finish();
rollback;
