-- Invariants 4 and 7 at the write path's cost (issue 16): stamp() takes each queued event's keys
-- (tenant, event_type, stream_id, flags) from its claimed queue row and never reads events: the
-- re-read by event_id cost a probe of the wide table per event. The keys must still be the
-- event's current ones: an UPDATE of an unstamped own event (a new stream, type, flags, id)
-- moves its queue row with it, a DELETE removes it, and the fold equals a recompute.
begin;
select plan(7);
select streamseal.set_service_name('stamp-from-queue');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 7), i / 7 + 1, 'thing.' || (i % 3), event_id => streamseal_test.uid(i))
    from generate_series(1, 100) i order by i));

-- Rewritten before their stamp: their numbers and fold must follow the new keys.
update streamseal.events set stream_id = 'moved', event_type = 'thing.moved', tenant = 't2'
where event_id = streamseal_test.uid(5);
update streamseal.events set flags = 1 where event_id = streamseal_test.uid(6);
update streamseal.events set event_id = streamseal_test.uid(1006) where event_id = streamseal_test.uid(7);
delete from streamseal.events where event_id = streamseal_test.uid(8);

create temp table reads on commit drop as select streamseal_test.rows_read('events') as events;
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (99, 99::bigint) $$,
    'the stamper numbered the 99 queued events still stored');
select is(streamseal_test.rows_read('events') - (select events from reads), 0::bigint,
    'and read no row of events to do it: the keys came with the claimed queue rows');

select results_eq(
    $$ select tenant, event_type, stream_id from streamseal.own_numbers where event_id = streamseal_test.uid(5) $$,
    $$ values ('t2'::text, 'thing.moved'::text, 'moved'::text collate "C") $$,
    'an event rewritten before its stamp is numbered under its new tenant, type and stream');
select is((select flags from streamseal.own_numbers where event_id = streamseal_test.uid(6)), 1,
    'and with its new flags');
select is((select count(*)::int from streamseal.own_numbers where event_id in (streamseal_test.uid(7), streamseal_test.uid(8))), 0,
    'an event whose id changed is numbered under its new id only, a deleted one not at all');
select is((select count(*)::int from streamseal.own_numbers where event_id = streamseal_test.uid(1006)), 1,
    'the new id is numbered');
select is(streamseal_test.digest_drift(), 0::bigint, 'the digests equal a recompute');

select * from finish();
rollback;
