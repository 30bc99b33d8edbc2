-- Invariant 7 (no number reused, no event numbered twice) at the write path's cost (issue 16):
-- own_numbers is keyed by the event's local_id, which grows with insertion, so a stamp appends
-- each number's key at the right edge of its index. It was keyed by event_id, a random uuid: a
-- stamp paid a descent to a random leaf of an index as large as the lane for every event it
-- numbered (~7 us an event of ~17 at 700k events, more once the index outgrows memory). The
-- unique key on local_id is what refuses a second number for one stored event.
begin;
select plan(6);
select streamseal.set_service_name('keyed-by-local-id');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 7), i / 7 + 1, 'thing.' || (i % 3), event_id => streamseal_test.uid(i))
    from generate_series(1, 50) i order by i));
select is((select stamped from streamseal.stamp()), 50, 'fixture: 50 own events stamped');

select has_column('streamseal', 'own_numbers', 'local_id', 'own_numbers names each number''s event by its local_id');
select is(
    (select pg_catalog.count(*)::int from streamseal.own_numbers n join streamseal.events e
     on e.local_id = n.local_id and e.event_id = n.event_id),
    50, 'every number carries its event''s local_id');
select is(
    (select pg_catalog.array_agg(pg_catalog.pg_get_indexdef(i.indexrelid) order by 1)
     from pg_catalog.pg_index i
     where i.indrelid = 'streamseal.own_numbers'::regclass
       and i.indkey[0] = (select a.attnum from pg_catalog.pg_attribute a
                          where a.attrelid = 'streamseal.own_numbers'::regclass and a.attname = 'event_id')),
    null, 'no index of own_numbers leads with event_id: a stamp inserts no random key per event');
select ok(
    (select pg_catalog.bool_or(i.indisunique and i.indnatts = 1 and i.indkey[0] = a.attnum)
     from pg_catalog.pg_index i
     join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attname = 'local_id'
     where i.indrelid = 'streamseal.own_numbers'::regclass),
    'own_numbers has a unique index on local_id alone');
select throws_ok(
    $$ insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
       select n.origin, 1000, 1000, n.event_id, n.tenant, n.event_type, n.stream_id, n.flags, n.local_id
       from streamseal.own_numbers n where n.origin_seq = 7 $$,
    '23505', 'duplicate key value violates unique constraint "own_numbers_local_id"', 'a second number for a stored event is refused by its local_id');

select * from finish();
rollback;
