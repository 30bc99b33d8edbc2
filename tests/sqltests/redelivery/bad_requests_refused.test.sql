-- Invariants 9 and 11: a redelivery request that does not name its tenants and event types, or
-- carries half a keyset cursor, an unreadable window or range, or a non-positive limit, is
-- refused with a message naming the bad value (22023), never read as "everything".
begin;
select plan(17);
select streamseal.set_service_name('redeliver-refusals');
select streamseal.append(array[streamseal_test.own('s1', 1, 'refused.type', event_id => streamseal_test.uid(1))]);
select streamseal.stamp();

select throws_ok(
    $$ select * from streamseal.select_redelivery(null, array['refused.type']) $$,
    '22023', 'select_redelivery: a redelivery request must name its tenants: expected a non-empty list, got null',
    'missing tenants are refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery('{}', array['refused.type']) $$,
    '22023', 'select_redelivery: a redelivery request must name its tenants: expected a non-empty list, got {}',
    'an empty tenant list is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1', null], array['refused.type']) $$,
    '22023', 'select_redelivery: a redelivery request must name its tenants: expected no null element, got {t1,NULL}',
    'a null tenant is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], null) $$,
    '22023', 'select_redelivery: a redelivery request must name its event types: expected a non-empty list, got null',
    'missing event types are refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type', '']) $$,
    '22023', 'select_redelivery: a redelivery request must name its event types: expected no empty name, got {refused.type,""}',
    'an empty event type name is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], after_stream => 's1') $$,
    '22023', 'select_redelivery: keyset cursor (''s1'', null) is half given: expected after_stream and after_version both or neither',
    'a cursor with a stream and no version is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], after_version => 1) $$,
    '22023', 'select_redelivery: keyset cursor (null, 1) is half given: expected after_stream and after_version both or neither',
    'a cursor with a version and no stream is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], max_events => 0) $$,
    '22023', 'select_redelivery: max_events 0 is invalid: expected a positive page size',
    'max_events 0 is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], max_events => null) $$,
    '22023', 'select_redelivery: max_events null is invalid: expected a positive page size',
    'a null max_events is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], cap => 0) $$,
    '22023', 'select_redelivery: cap 0 is invalid: expected a positive limit',
    'cap 0 is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], from_seq => 5, to_seq => 3) $$,
    '22023', 'select_redelivery: origin_seq window [5, 3) is invalid: expected 0 <= from <= to (null: unbounded)',
    'a window ending before it starts is refused');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], streams => '{}') $$,
    '22023', 'select_redelivery: a stream filter must name its streams (null: every stream): expected a non-empty list, got {}',
    'an empty stream filter is refused, not read as every stream or none');
select throws_ok(
    $$ select * from streamseal.select_redelivery(array['t1'], array['refused.type'], type_seq_ranges => '{}') $$,
    '22023', 'select_redelivery: type_seq_ranges {} is invalid: expected null (every type_seq) or at least one range',
    'empty type_seq ranges are refused');
select throws_ok(
    $$ select * from streamseal.redelivery_unservable(array['t1'], '{}', type_seq_ranges => '{[1,2)}') $$,
    '22023', 'redelivery_unservable: a redelivery request must name its event types: expected a non-empty list, got {}',
    'redelivery_unservable refuses a request without event types');
select throws_ok(
    $$ select * from streamseal.redelivery_unservable(null, array['refused.type'], 1, 10) $$,
    '22023', 'redelivery_unservable: a redelivery request must name its tenants: expected a non-empty list, got null',
    'redelivery_unservable refuses a request without tenants');

-- The refusals are specific: the same request made well is served.
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['refused.type'], array['s1'], 0, 10,
                                                           '{[1,2)}', 's0', 1, 1, 1) $$,
    $$ values (streamseal_test.uid(1)) $$,
    'a complete request is served');
select is_empty(
    $$ select * from streamseal.redelivery_unservable(array['t1'], array['refused.type'], 0, 10, '{[1,2)}') $$,
    'a complete request with nothing unservable answers no rows');

select * from finish();
rollback;
