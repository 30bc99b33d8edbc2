-- Invariant 13: what the relay or the stamper could not carry is refused at the door. append and
-- ingest refuse an oversize payload, an overlong tenant, event type or stream id, a stream version
-- below 1 and oversize metadata, naming the limit; nothing of the batch is stored.
begin;
select plan(14);
select streamseal.set_service_name('limits-door');
select streamseal.set_limits(max_payload_bytes => 16, max_id_bytes => 8, max_metadata_bytes => 20);

select throws_ok(
    $$ select streamseal.append(array[
           streamseal_test.own('ok', 1, event_type => 't', event_id => streamseal_test.uid(1)),
           streamseal_test.own('big', 1, event_type => 't', payload => '\x000102030405060708090a0b0c0d0e0f10'::bytea, event_id => streamseal_test.uid(2))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000002 (#2 of the batch): payload is 17 bytes: the limit is 16 (streamseal.limits max_payload_bytes)',
    'an oversize payload refuses the batch');
select throws_ok(
    $$ select streamseal.append(array[streamseal_test.own('ok', 1, tenant => 'tenant-nine', event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000003 (#1 of the batch): tenant is 11 bytes: the limit is 8 (streamseal.limits max_id_bytes)',
    'an overlong tenant is refused');
select throws_ok(
    $$ select streamseal.append(array[streamseal_test.own('ok', 1, event_type => 'type.of.nine', event_id => streamseal_test.uid(4))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000004 (#1 of the batch): event_type is 12 bytes: the limit is 8 (streamseal.limits max_id_bytes)',
    'an overlong event type is refused');
select throws_ok(
    $$ select streamseal.append(array[streamseal_test.own('stream-nine', 1, event_type => 't', event_id => streamseal_test.uid(5))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000005 (#1 of the batch): stream_id is 11 bytes: the limit is 8 (streamseal.limits max_id_bytes)',
    'an overlong stream id is refused');
select throws_ok(
    $$ select streamseal.append(array[streamseal_test.own('ok', 0, event_type => 't', event_id => streamseal_test.uid(6))]) $$,
    '22023',
    'append: event 00000000-0000-0000-0000-000000000006 (#1 of the batch): stream_version 0 is invalid: expected >= 1',
    'a stream version of 0 is refused');
select throws_ok(
    $$ select streamseal.append('t1', 'ok', -3, 't', '\x7b7d'::bytea) $$,
    '22023',
    'append: event (new) (#1 of the batch): stream_version -3 is invalid: expected >= 1',
    'a negative stream version is refused');
select throws_ok(
    $$ select streamseal.append('t1', 'ok', 1, 't', '\x7b7d'::bytea, '{"note":"far too long for twenty"}'::jsonb) $$,
    '22023',
    'append: event (new) (#1 of the batch): metadata is 35 bytes: the limit is 20 (streamseal.limits max_metadata_bytes)',
    'oversize metadata is refused');
select is((select count(*)::int from streamseal.events), 0, 'append stored nothing of a refused batch');

select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('other', 1, 1, 'ok', 1, event_type => 't', event_id => streamseal_test.uid(11)),
           streamseal_test.copy('other', 2, 2, 'ok', 2, event_type => 't', payload => '\x000102030405060708090a0b0c0d0e0f10'::bytea, event_id => streamseal_test.uid(12))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-00000000000c (#2 of the batch): payload is 17 bytes: the limit is 16 (streamseal.limits max_payload_bytes)',
    'ingest refuses an oversize payload');
select throws_ok(
    $$ select streamseal.ingest(array[streamseal_test.copy('other', 1, 1, 'ok', -1, event_type => 't', event_id => streamseal_test.uid(13))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-00000000000d (#1 of the batch): stream_version -1 is invalid: expected >= 1',
    'ingest refuses a negative stream version');
select throws_ok(
    $$ select streamseal.ingest(array[streamseal_test.copy('other', 1, 1, 'ok', 1, tenant => repeat('é', 5), event_type => 't', event_id => streamseal_test.uid(14))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-00000000000e (#1 of the batch): tenant is 10 bytes: the limit is 8 (streamseal.limits max_id_bytes)',
    'ids are measured in bytes, not characters');
select is((select count(*)::int from streamseal.events), 0, 'ingest stored nothing of a refused batch');

select lives_ok(
    $$ select streamseal.append(array[streamseal_test.own('ok', 1, event_type => 't', payload => '\x000102030405060708090a0b0c0d0e0f'::bytea)]) $$,
    'an event at every limit is stored');
select is((select count(*)::int from streamseal.events), 1, 'exactly that one');

select * from finish();
rollback;
