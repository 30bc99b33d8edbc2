-- Invariant 8: type_digests returns the watermark it actually covered, least(to, settled max + 1)
-- and never below from, so the next window starts exactly there; a window with nothing settled in
-- it still answers (one quiet row carrying the watermark), and unsettled rows never count.
begin;
select plan(11);
select streamseal.set_service_name('answer-watermark');

-- Own lane: 25 stamped events, then 3 appended but not yet stamped.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 2), i, event_id => streamseal_test.uid(i))
    from generate_series(1, 25) i order by i));
select streamseal.stamp();
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 2), i, event_id => streamseal_test.uid(i))
    from generate_series(26, 28) i order by i));

select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-watermark', 5, 100) $$,
    $$ select 't1'::text, 'thing.happened'::text, bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)),
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)), count(*), 26::bigint
       from generate_series(5, 25) i $$,
    'asking [5, 100) covers [5, 26): watermark 26 = settled max + 1, unstamped events not counted');
select results_eq(
    $$ select n, watermark from streamseal.type_digests('answer-watermark', 5, 12) $$,
    $$ values (7::bigint, 12::bigint) $$,
    'a window below the settled max is answered whole: [5, 12) holds 7 events, watermark 12');
select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-watermark', 30, 40) $$,
    $$ values (null::text, null::text, 0::bigint, 0::bigint, 0::bigint, 30::bigint) $$,
    'from beyond the settled max: one quiet row, n = 0, watermark = from (never below it)');
select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-watermark', 26, 40) $$,
    $$ values (null::text, null::text, 0::bigint, 0::bigint, 0::bigint, 26::bigint) $$,
    'from = settled max + 1: one quiet row with watermark 26');
select results_eq(
    $$ select tenant, event_type, n, watermark from streamseal.type_digests('answer-watermark', 10, 10) $$,
    $$ values (null::text, null::text, 0::bigint, 10::bigint) $$,
    'an empty window [10, 10) answers one quiet row with watermark 10');

select streamseal.stamp();
select results_eq(
    $$ select n, watermark from streamseal.type_digests('answer-watermark', 5, 100) $$,
    $$ values (24::bigint, 29::bigint) $$,
    'once stamped, the 3 events count and the watermark moves to 29');

-- Received lane: copies 1..20 stored two hours ago, 21..25 stored now (inside the 1 h settle).
select streamseal.ingest(array(
    select streamseal_test.copy('wm-origin', i, i, 'k', i, event_id => streamseal_test.uid(100 + i))
    from generate_series(1, 25) i));
update streamseal.events set stored_at = now() - interval '2 hours'
where origin = 'wm-origin' and origin_seq <= 20;

select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('wm-origin', 0, 100, interval '1 hour') $$,
    $$ select 't1'::text, 'thing.happened'::text, bit_xor(hashtextextended(streamseal_test.uid(100 + i)::text, 0)),
              bit_xor(hashtextextended(streamseal_test.uid(100 + i)::text, 1)), count(*), 21::bigint
       from generate_series(1, 20) i $$,
    'received lane: fresh copies 21..25 lie beyond the cap; the answer covers [0, 21)');
select results_eq(
    $$ select tenant, n, watermark from streamseal.type_digests('wm-origin', 15, 18, interval '1 hour') $$,
    $$ values ('t1'::text, 3::bigint, 18::bigint) $$,
    'received lane: a window below the cap is answered whole');
select results_eq(
    $$ select tenant, n, watermark from streamseal.type_digests('wm-origin', 22, 100, interval '1 hour') $$,
    $$ values (null::text, 0::bigint, 22::bigint) $$,
    'received lane: from beyond the settled max answers one quiet row with watermark = from');

-- After the fresh copies settle, the cap moves to 26.
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'wm-origin';
select results_eq(
    $$ select n, watermark from streamseal.type_digests('wm-origin', 0, 100, interval '1 hour') $$,
    $$ values (25::bigint, 26::bigint) $$,
    'received lane: once settled, all 25 copies count and the watermark is 26');

select throws_ok(
    $$ select * from streamseal.type_digests('wm-origin', 10, 5) $$,
    '22023', 'type_digests: window [10, 5) of lane ''wm-origin'' is invalid: expected 0 <= from <= to',
    'an inverted window is refused');

select * from finish();
rollback;
