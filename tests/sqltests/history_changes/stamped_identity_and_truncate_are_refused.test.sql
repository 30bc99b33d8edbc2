-- Invariants 3 and 10 (issue 15 item 2): what cannot travel as a fact is refused with a clear
-- error. An UPDATE that rewrites a stamped own event's identity or payload (consumers hold those
-- bytes; digests fold only ids, so it would diverge silently) and a TRUNCATE of the store (a
-- statement trigger cannot see which events left). Unstamped own events, stamped ephemeral ones
-- and copies' flags may still change.
begin;
select plan(7);
select streamseal.set_service_name('hc-refuse');
select streamseal.append(array[streamseal_test.own('s1', 1, event_id => streamseal_test.uid(1)),
                               streamseal_test.own('s1', 2, event_id => streamseal_test.uid(2)),
                               streamseal_test.own('e1', 1, 'ping.sent', flags => 1, event_id => streamseal_test.uid(4))]);
select streamseal.stamp();
select streamseal.append(array[streamseal_test.own('s1', 3, event_id => streamseal_test.uid(3))]);
select streamseal.ingest(array[streamseal_test.copy('hc-elsewhere', 1, 1, 's0', 1, event_id => streamseal_test.uid(9))]);

select throws_ok($$ update streamseal.events set payload = '\x7b2278223a317d' where event_id = streamseal_test.uid(1) $$,
    '0A000', 'event 00000000-0000-0000-0000-000000000001 (origin "hc-refuse", origin_seq 1) is stamped: its identity (event_id, origin, sequences, tenant, stream, version, type, payload) cannot change; append a new event, or remove it with DELETE or streamseal.close_stream',
    'rewriting a stamped own payload is refused');
select throws_ok($$ update streamseal.events set stream_version = 7 where event_id = streamseal_test.uid(2) $$,
    '0A000', null, 'rewriting a stamped own stream version is refused');
select lives_ok($$ update streamseal.events set payload = '\x7b7d20' where event_id = streamseal_test.uid(3) $$,
    'an unstamped own event may still change (nothing has seen it)');
select lives_ok($$ update streamseal.events set payload = '\x' where event_id = streamseal_test.uid(4) $$,
    'a stamped ephemeral event is outside sealed history: its body may change (retention)');
select lives_ok($$ update streamseal.events set flags = 1 where event_id = streamseal_test.uid(9) $$,
    'a copy''s flags may change (apply_history_changes does it)');
select throws_ok($$ truncate streamseal.events $$, '0A000',
    'TRUNCATE of streamseal.events is refused: consumers could not learn which events left; close own streams with streamseal.close_stream(tenant, stream_id), or DELETE own events (both travel to consumers)',
    'TRUNCATE of the store is refused');
select is((select count(*)::int from streamseal.events), 5, 'and every event is still there');

select * from finish();
rollback;
