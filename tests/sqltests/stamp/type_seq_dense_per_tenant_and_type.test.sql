-- Invariant 7: the stamper numbers own events in append order with no gap or reuse: origin_seq is
-- 1..N across the lane and type_seq is 1..k per (tenant, event_type), across batches and partial stamps.
begin;
select plan(10);
select streamseal.set_service_name('stamp-dense');

select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (0, 0::bigint) $$,
    'stamp on an empty lane stamps nothing and reports last_origin_seq 0');

-- Batch 1: five events interleaved over 2 tenants x 2 types.
select streamseal.append(array[
    streamseal_test.own('ta-s', 1, 'x.made', 'ta', event_id => streamseal_test.uid(1)),
    streamseal_test.own('tb-s', 2, 'y.made', 'tb', event_id => streamseal_test.uid(2)),
    streamseal_test.own('ta-s', 3, 'y.made', 'ta', event_id => streamseal_test.uid(3)),
    streamseal_test.own('ta-s', 4, 'x.made', 'ta', event_id => streamseal_test.uid(4)),
    streamseal_test.own('tb-s', 5, 'x.made', 'tb', event_id => streamseal_test.uid(5))]);
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (5, 5::bigint) $$,
    'stamp numbers the first batch: 5 stamped, last_origin_seq 5');

-- Batch 2: four events, stamped in two partial runs.
select streamseal.append(array[
    streamseal_test.own('tb-s', 6, 'y.made', 'tb', event_id => streamseal_test.uid(6)),
    streamseal_test.own('ta-s', 7, 'x.made', 'ta', event_id => streamseal_test.uid(7)),
    streamseal_test.own('tb-s', 8, 'x.made', 'tb', event_id => streamseal_test.uid(8)),
    streamseal_test.own('ta-s', 9, 'y.made', 'ta', event_id => streamseal_test.uid(9))]);
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp(max_events => 2) $$, $$ values (2, 7::bigint) $$,
    'a capped stamp numbers only the oldest 2 pending events');
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (2, 9::bigint) $$,
    'the next stamp numbers the remaining 2 above them');

-- Batch 3: two appends (two statements) before one stamp.
select streamseal.append(array[
    streamseal_test.own('ta-s', 10, 'x.made', 'ta', event_id => streamseal_test.uid(10)),
    streamseal_test.own('tb-s', 11, 'y.made', 'tb', event_id => streamseal_test.uid(11))]);
select streamseal.append(array[
    streamseal_test.own('tb-s', 12, 'y.made', 'tb', event_id => streamseal_test.uid(12)),
    streamseal_test.own('ta-s', 13, 'y.made', 'ta', event_id => streamseal_test.uid(13))]);
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (4, 13::bigint) $$,
    'stamp numbers two appends'' events together: 4 stamped, last_origin_seq 13');
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (0, 13::bigint) $$,
    'a second stamp with nothing pending stamps 0 and still reports last_origin_seq 13');

select results_eq(
    $$ select event_id, origin_seq from streamseal.numbered_events where origin = 'stamp-dense' order by origin_seq $$,
    $$ select streamseal_test.uid(n), n::bigint from generate_series(1, 13) n $$,
    'origin_seq is exactly 1..13 in append order');

select results_eq(
    $$ select tenant, event_type, event_id, type_seq from streamseal.numbered_events
       where origin = 'stamp-dense' order by tenant, event_type, type_seq $$,
    $$ values ('ta', 'x.made', streamseal_test.uid(1), 1::bigint), ('ta', 'x.made', streamseal_test.uid(4), 2),
              ('ta', 'x.made', streamseal_test.uid(7), 3), ('ta', 'x.made', streamseal_test.uid(10), 4),
              ('ta', 'y.made', streamseal_test.uid(3), 1), ('ta', 'y.made', streamseal_test.uid(9), 2),
              ('ta', 'y.made', streamseal_test.uid(13), 3),
              ('tb', 'x.made', streamseal_test.uid(5), 1), ('tb', 'x.made', streamseal_test.uid(8), 2),
              ('tb', 'y.made', streamseal_test.uid(2), 1), ('tb', 'y.made', streamseal_test.uid(6), 2),
              ('tb', 'y.made', streamseal_test.uid(11), 3), ('tb', 'y.made', streamseal_test.uid(12), 4) $$,
    'type_seq is exactly 1..k per (tenant, event_type), following append order');

select results_eq(
    $$ select tenant, event_type, last_type_seq from streamseal.type_seq_counters order by 1, 2 $$,
    $$ values ('ta', 'x.made', 4::bigint), ('ta', 'y.made', 3), ('tb', 'x.made', 2), ('tb', 'y.made', 4) $$,
    'the type_seq counters hold each (tenant, event_type)''s last number');

select is((select last_origin_seq from streamseal.stamp_state), 13::bigint,
    'the lane counter holds the last origin_seq handed out');

select * from finish();
rollback;
