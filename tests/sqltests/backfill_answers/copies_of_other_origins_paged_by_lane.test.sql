-- Invariants 3 and 11, issue 18 (a third service holding forwarded copies may answer a backfill):
-- select_forwarded_copies pages the copies this service holds of other origins' events of the
-- named types that the requester is granted here, in (origin, stream, version) order with keyset
-- continuation across lanes, identity and payload bytes as stored; never its own events, never
-- the requester's own, never ephemeral ones, and at-most-once occurrences only of an opted-in type.
begin;
select plan(9);
select streamseal.set_service_name('fw-third');
select streamseal.grant_redelivery_all_tenants('fw-billing', array['fw.paid']);

select streamseal.ingest(array[
    streamseal_test.copy('fw-orders', 1, 1, 's2', 1, event_type => 'fw.paid', payload => '\x0201', event_id => streamseal_test.uid(1)),
    streamseal_test.copy('fw-orders', 2, 2, 's1', 1, event_type => 'fw.paid', payload => '\x0101', event_id => streamseal_test.uid(2)),
    streamseal_test.copy('fw-orders', 3, 1, 's1', 2, event_type => 'fw.placed', event_id => streamseal_test.uid(3)),
    streamseal_test.copy('fw-orders', 4, 3, 's1', 3, event_type => 'fw.paid', flags => 1, event_id => streamseal_test.uid(4)),
    streamseal_test.copy('fw-orders', 5, 4, 's1', 4, event_type => 'fw.paid', flags => 2, event_id => streamseal_test.uid(5)),
    streamseal_test.copy('fw-stock', 1, 1, 'a', 1, event_type => 'fw.paid', event_id => streamseal_test.uid(6)),
    streamseal_test.copy('fw-billing', 1, 1, 'b', 1, event_type => 'fw.paid', event_id => streamseal_test.uid(7))]);
-- Its own event of the type: select_redelivery's business, never a forwarded copy.
select streamseal.append('t1', 'own', 1, 'fw.paid', '\x01'::bytea, event_id => streamseal_test.uid(8));
select streamseal.stamp();

select results_eq(
    $$ select origin, event_id, origin_seq, type_seq, stream_id, stream_version, payload
       from streamseal.select_forwarded_copies('fw-billing', array['fw.paid']) $$,
    $$ values ('fw-orders'::text, streamseal_test.uid(2), 2::bigint, 2::bigint, 's1'::text, 1::bigint, '\x0101'::bytea),
              ('fw-orders', streamseal_test.uid(1), 1, 1, 's2', 1, '\x0201'),
              ('fw-stock', streamseal_test.uid(6), 1, 1, 'a', 1, '\x7b7d') $$,
    'copies of other origins, by lane then stream and version, identity and bytes as stored; no own, requester''s, ephemeral or at-most-once event');
select results_eq(
    $$ select event_id from streamseal.select_forwarded_copies('fw-billing', array['fw.paid'], max_events => 2) $$,
    $$ values (streamseal_test.uid(2)), (streamseal_test.uid(1)) $$,
    'a page stops at max_events');
select results_eq(
    $$ select event_id from streamseal.select_forwarded_copies('fw-billing', array['fw.paid'], 'fw-orders', 's2', 1, max_events => 2) $$,
    $$ values (streamseal_test.uid(6)) $$,
    'the next page continues strictly after the keyset, into the next lane');
select results_eq(
    $$ select event_id from streamseal.select_forwarded_copies('fw-billing', array['fw.paid'], 'fw-stock') $$,
    $$ values (streamseal_test.uid(6)) $$,
    'a lane alone as the cursor starts at that lane');
select results_eq(
    $$ select event_id from streamseal.select_forwarded_copies('fw-billing', array['fw.paid'], at_most_once_types => array['fw.paid']) $$,
    $$ values (streamseal_test.uid(2)), (streamseal_test.uid(5)), (streamseal_test.uid(1)), (streamseal_test.uid(6)) $$,
    'an opted-in type''s at-most-once occurrence is selected too; ephemeral never');
select is_empty(
    $$ select * from streamseal.select_forwarded_copies('fw-nobody', array['fw.paid']) $$,
    'a requester granted nothing here gets nothing (invariant 11)');
select throws_ok(
    $$ select * from streamseal.select_forwarded_copies('fw-billing', array[]::text[]) $$,
    '22023', 'select_forwarded_copies: a backfill must name its event types: expected a non-empty list, got {}',
    'a request naming no type is refused');
-- Progress: the whole answer's size, from the digests (ephemeral and at-most-once not counted).
select is(streamseal.backfill_total('fw-billing', array['fw.paid']), 1::bigint,
          'the own lane''s total: the one own fw.paid event');
select is(streamseal.backfill_total('fw-billing', array['fw.paid'], copies => true), 4::bigint,
          'with copies: the own event and the three copies a backfill would forward');
select * from finish();
rollback;
