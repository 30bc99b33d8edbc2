-- Invariants 9 and 10 across databases: a stream page's order and its cursor are byte order
-- (collate "C"), whatever the database's default collation or the collation the caller's cursor
-- carries. Two services' databases may sort text differently (ICU or glibc en-US against C); the
-- consumer reads the page's range (covered_after, covered_through] in byte order, so the origin
-- must page in it too. The cursors below carry the ICU en-US collation, as an en-US database's
-- default would: there 'a' < 'B', in bytes 'B' < 'a'.
begin;
select plan(6);
select streamseal.set_service_name('answer-byte-order');

select streamseal.append(array[
    streamseal_test.own('b', 1, event_id => streamseal_test.uid(1)),
    streamseal_test.own('a', 1, event_id => streamseal_test.uid(2)),
    streamseal_test.own('a-1', 1, event_id => streamseal_test.uid(3)),
    streamseal_test.own('A-2', 1, event_id => streamseal_test.uid(4)),
    streamseal_test.own('B', 1, event_id => streamseal_test.uid(5))]);
select streamseal.stamp();

select is(
    (select array_agg(distinct coalesce(co.collname, 'default') order by coalesce(co.collname, 'default'))
     from pg_catalog.pg_attribute a
     left join pg_catalog.pg_collation co on co.oid = a.attcollation and a.attcollation <> 100
     where a.attname = 'stream_id' and a.attnum > 0 and not a.attisdropped
       and a.attrelid in ('streamseal.events'::regclass, 'streamseal.own_numbers'::regclass,
                          'streamseal.stream_digests'::regclass, 'streamseal.repair_ledger'::regclass)),
    array['C']::name[],
    'the stream_id columns the pages, comparisons and ledger read are collate "C" (migration 045)');

-- Whole history (the maintained stream_digests, walked by its (origin, stream_id) index).
select is(
    array(select d.stream_id from streamseal.stream_digests_page('answer-byte-order', null, 0, 100, null, 2) d order by d.stream_id collate "C"),
    array['A-2', 'B'],
    'the first page of the whole history holds the first streams in byte order: upper case first');
select is(
    array(select d.stream_id from streamseal.stream_digests_page('answer-byte-order', null, 0, 100, 'B' collate "en-US-x-icu", 2) d
          order by d.stream_id collate "C"),
    array['a', 'a-1'],
    'the page after B holds a and a-1 (after B in bytes, before it in en-US), whatever the cursor''s collation');
select is(
    (select max(d.resume_after) from streamseal.stream_digests_page('answer-byte-order', null, 0, 100, 'B' collate "en-US-x-icu", 2) d),
    'a-1',
    'its cursor is its last stream in byte order');

-- A window inside the history (folded from the store's events in the window).
select is(
    array(select d.stream_id from streamseal.stream_digests_page('answer-byte-order', null, 2, 100, 'B' collate "en-US-x-icu", 2) d
          order by d.stream_id collate "C"),
    array['a', 'a-1'],
    'a window''s page after B holds a and a-1 too');
select is(
    array(select d.stream_id from streamseal.stream_digests_page('answer-byte-order', null, 2, 100, 'a-1' collate "en-US-x-icu", 2) d),
    array[null]::text[],
    'after a-1 the window is complete (b lies outside it): the empty page');

select * from finish();
rollback;
