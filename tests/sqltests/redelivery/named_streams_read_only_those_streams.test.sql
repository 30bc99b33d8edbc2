-- Invariant 8 (repair traffic grows with what is missing, never with history): a request that
-- names its streams over a wide origin_seq window (the audit's repairs: the audited window, the
-- divergent streams) reads those streams, not the window. In one query with the window, a table
-- not analyzed since a bulk load got a read of the whole window through the origin_seq index:
-- 200-270 ms for a 100-event page at 1M events. Rows read come from streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('redeliver-streams');

-- 4000 own events over 200 streams (20 each), types a and b alternating by stream.
select streamseal.append(array(
    select streamseal_test.own('s' || lpad((i % 200)::text, 3, '0'), i / 200 + 1, case when i % 2 = 0 then 'a' else 'b' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(0, 3999) i));
select count(*) from streamseal.stamp();

create temp table read_before on commit drop as
select streamseal_test.rows_read('events') as n;
create temp table page on commit drop as
select * from streamseal.select_redelivery(array['t1'], array['a'], streams => array['s010', 's020', 's010', 's021'],
    from_seq => 1, to_seq => 4001, max_events => 30);
create temp table read_after on commit drop as
select streamseal_test.rows_read('events') as n;

select results_eq(
    $$ select stream_id, count(*)::int, min(stream_version), max(stream_version) from page group by stream_id order by stream_id $$,
    $$ values ('s010', 20, 1::bigint, 20::bigint), ('s020', 10, 1::bigint, 10::bigint) $$,
    'fixture: a page of 30 in (stream, version) order, from the named streams of the asked type only');
select results_eq(
    $$ select count(*)::int from streamseal.select_redelivery(array['t1'], array['a'], streams => array['s010', 's020', 's021'],
           from_seq => 1, to_seq => 4001, after_stream => 's020', after_version => 10, max_events => 30) $$,
    $$ values (10) $$,
    'the next page continues after the keyset');
select cmp_ok((select n from read_after) - (select n from read_before), '<=', 60::bigint,
    'the page read the named streams (3 x 20 events), not the 4000-event window');
select is((select count(*)::int from page where event_type <> 'a' or tenant <> 't1'), 0,
    'filters still apply inside each stream');

select * from finish();
rollback;
