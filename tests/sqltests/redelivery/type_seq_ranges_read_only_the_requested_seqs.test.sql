-- Invariant 8 (repair traffic grows with what is missing, never with history): a checkpoint
-- repair names type_seq ranges of one (tenant, type) lane and no window; its page reads the
-- requested type_seqs through the type_seq index, not the whole lane in stream order (measured
-- before: ~450 ms a page, ~900 ms a 1000-range request, at 1M events). Rows read come from
-- streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('redeliver-seqs');

-- 4000 own events of one lane (tenant t1, type a) over 200 streams.
select streamseal.append(array(
    select streamseal_test.own('s' || lpad((i % 200)::text, 3, '0'), i / 200 + 1, 'a', event_id => streamseal_test.uid(i))
    from generate_series(0, 3999) i));
select count(*) from streamseal.stamp();

create temp table read_before on commit drop as
select streamseal_test.rows_read('events') as n;
-- Ten scattered holes and one run of five: 15 type_seqs of a 4000-event lane.
create temp table page on commit drop as
select * from streamseal.select_redelivery(array['t1'], array['a'],
    type_seq_ranges => '{[7,8),[400,401),[999,1000),[1500,1501),[2000,2001),[2500,2501),[3000,3001),[3333,3334),[3700,3701),[3999,4000),[100,105)}'::int8multirange,
    max_events => 500);
create temp table read_after on commit drop as
select streamseal_test.rows_read('events') as n;

select results_eq(
    $$ select type_seq from page order by type_seq $$,
    $$ values (7::bigint), (100), (101), (102), (103), (104), (400), (999), (1500), (2000), (2500), (3000), (3333), (3700), (3999) $$,
    'fixture: the page holds exactly the requested type_seqs');
select ok((select bool_and(k.ok) from (
        select (stream_id, stream_version) > lag((stream_id, stream_version)) over (order by stream_id, stream_version)
               or lag(stream_id) over (order by stream_id, stream_version) is null as ok
        from page) k),
    'the page is in (stream, version) order');
select results_eq(
    $$ select count(*)::int from streamseal.select_redelivery(array['t1'], array['a'],
           type_seq_ranges => '{[7,8),[400,401),[999,1000),[1500,1501),[2000,2001),[2500,2501),[3000,3001),[3333,3334),[3700,3701),[3999,4000),[100,105)}'::int8multirange,
           after_stream => (select max(stream_id) from page where stream_id < 's100'), after_version => 1000, max_events => 500) $$,
    $$ select count(*)::int from page where stream_id >= 's100' $$,
    'a keyset continues after the cursor');
select cmp_ok((select n from read_after) - (select n from read_before), '<=', 60::bigint,
    'the page read the 15 requested type_seqs, not the 4000-event lane');

select * from finish();
rollback;
