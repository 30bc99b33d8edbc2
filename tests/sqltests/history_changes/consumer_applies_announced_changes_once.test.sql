-- Invariants 2, 4 and 10 (issue 15 item 2): a consumer applies an origin's announced history
-- changes to its copies once: removed copies go, reclassified copies take the origin's flags and
-- leave every fold (digests and closed epochs exact), the cursor moves, a replay changes nothing,
-- and nothing the origin did not name is touched (other origins, unnamed copies). Bad input is
-- refused whole.
begin;
select plan(15);
select streamseal.set_service_name('hc-consumer');

select streamseal.ingest(array(
    select streamseal_test.copy('hc-origin', i, i, 's' || (i % 2), i / 2 + 1, event_id => streamseal_test.uid(i))
    from generate_series(1, 10) i));
select streamseal.ingest(array[streamseal_test.copy('hc-other', 1, 1, 's0', 1, event_id => streamseal_test.uid(100))]);
-- A backfilled copy (state-only, bit 4) of the origin, reclassified below: it keeps its own bit.
select streamseal.ingest(array[streamseal_test.copy('hc-origin', 11, 11, 's9', 1, flags => 4, event_id => streamseal_test.uid(11))]);
update streamseal.events set stored_at = now() - interval '2 hours';
select is((select count(*)::int from streamseal.close_epochs(width => 5, settle => interval '1 hour')), 2, 'setup: the copies'' epochs 0 and 1 close');

select is(streamseal.copy_history_cursor('hc-origin'), 0::bigint, 'no change applied yet: cursor 0');
select is(streamseal.apply_history_changes('hc-origin', jsonb_build_array(
    jsonb_build_object('change_id', 3, 'kind', 'removed', 'event_id', streamseal_test.uid(2), 'flags', 0),
    jsonb_build_object('change_id', 4, 'kind', 'reclassified', 'event_id', streamseal_test.uid(3), 'flags', 1),
    jsonb_build_object('change_id', 5, 'kind', 'reclassified', 'event_id', streamseal_test.uid(4), 'flags', 1),
    jsonb_build_object('change_id', 6, 'kind', 'removed', 'event_id', streamseal_test.uid(4), 'flags', 1),
    jsonb_build_object('change_id', 7, 'kind', 'removed', 'event_id', streamseal_test.uid(100), 'flags', 0),
    jsonb_build_object('change_id', 8, 'kind', 'reclassified', 'event_id', streamseal_test.uid(11), 'flags', 1)), 9),
    4::bigint, 'two copies removed (the last change of event 4 decides) and two reclassified');
select is((select count(*)::int from streamseal.events where origin = 'hc-origin'), 9, 'the origin''s 9 other copies stay');
select is((select flags from streamseal.events where event_id = streamseal_test.uid(11)), 5,
    'a reclassified backfilled copy takes the fold bit and keeps its state-only bit');
select is((select flags from streamseal.events where event_id = streamseal_test.uid(3)), 1, 'the reclassified copy is ephemeral');
select is((select count(*)::int from streamseal.events where origin = 'hc-other'), 1,
    'another origin''s copy with a named id stays: changes apply to the announcing origin''s lane only');
select is(streamseal.copy_history_cursor('hc-origin'), 9::bigint, 'the cursor moves to the origin''s scanned end');
select is(streamseal_test.digest_drift(), 0::bigint, 'the stream digests follow exactly');
select is((select coalesce(sum(drifted), 0)::int from streamseal.verify_digest_epochs()), 0, 'the closed epochs follow exactly (a recompute finds no drift)');

select is(streamseal.apply_history_changes('hc-origin', jsonb_build_array(
    jsonb_build_object('change_id', 3, 'kind', 'removed', 'event_id', streamseal_test.uid(5), 'flags', 0)), 9),
    0::bigint, 'a change at or below the cursor is not applied again');
select is((select count(*)::int from streamseal.events where origin = 'hc-origin'), 9, 'so nothing moved');

select throws_ok($$ select streamseal.apply_history_changes('hc-origin', '[{"change_id": 10, "kind": "rewritten", "event_id": "00000000-0000-0000-0000-000000000005"}]', 10) $$,
    '22023', 'apply_history_changes: change 10 of origin "hc-origin" (kind rewritten, event 00000000-0000-0000-0000-000000000005, flags null) is invalid: expected a positive change_id, an event_id, kind removed or reclassified, and known flags',
    'an unknown kind is refused whole');
select is(streamseal.copy_history_cursor('hc-origin'), 9::bigint, 'and the cursor stays');
select throws_ok($$ select streamseal.apply_history_changes('hc-consumer', '[]', 0) $$, '22023',
    'apply_history_changes: origin ''hc-consumer'' is invalid: expected another service',
    'a service cannot apply changes to its own lane');

select * from finish();
rollback;
