-- Invariant 8 (bounded cost): a stream-level page over a lane's whole history is answered from
-- stream_digests and reads no event. The branch that folds events is gated on whole_history;
-- as a join filter against the bounds row, a planner that believed the events table small (not
-- analyzed since a burst of copies) read the whole lane and tested the gate on every row:
-- 250-650 ms a page at 1M events instead of 4 ms. Rows read come from streamseal_test.rows_read.
begin;
select plan(3);
select streamseal.set_service_name('cmp-gate');

-- 4000 copies over 400 streams of one type; the page covers the first stream only.
select count(*) from streamseal.ingest(array(
    select streamseal_test.copy('gate-origin', i, i, 's' || lpad((i % 400)::text, 3, '0'), i / 400 + 1, 'gate.type',
                                event_id => streamseal_test.uid(i))
    from generate_series(1, 4000) i));

create temp table page on commit drop as
select * from streamseal.stream_digests_page('gate-origin', array['gate.type'], 0, 4001, null, 1);
select is((select count(*)::int from page), 1, 'fixture: a page of one stream');

create temp table read_before on commit drop as
select streamseal_test.rows_read('events') as n;

select is(
    (select count(*)::int from streamseal.compare_stream_digests('gate-origin', 0, 4001,
        (select array_agg(stream_id) from page), (select array_agg(tenant) from page),
        (select array_agg(event_type) from page), (select array_agg(x0) from page),
        (select array_agg(x1) from page), (select array_agg(n) from page),
        covered_through => (select max(stream_id) from page))),
    0, 'fixture: the healthy page matches');

select cmp_ok(
    (streamseal_test.rows_read('events') - (select n from read_before))::int,
    '<=', 1,
    'the whole-history comparison read at most the lane''s top row, not the lane');

select * from finish();
rollback;
