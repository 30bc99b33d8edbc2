-- Invariant 8: type_digests answers a window from sealed folds exactly where they cover it (a
-- closed epoch wholly inside the window from digest_epochs, the whole sealed history from
-- sealed_prefix) and folds every partly covered epoch live. Corrupting one sealed row shows which
-- path each window took (Invariant 4: the maintained folds are what the answer trusts).
begin;
select plan(9);
select streamseal.set_service_name('answer-sealed-paths');

-- 45 own events over 2 types; width 10 closes epochs 0..3, epoch 4 (holding 45) stays open.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 3), i, case when i % 2 = 0 then 'a.done' else 'b.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 45) i order by i));
select streamseal.stamp();
select is((select count(*)::int from streamseal.close_epochs(width => 10)), 4, 'setup: epochs 0..3 close');

-- Phase 1: corrupt epoch 2's a.done row; sealed_prefix stays intact.
update streamseal.digest_epochs set x0 = x0 # 1
where origin = 'answer-sealed-paths' and epoch = 2 and event_type = 'a.done';

select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-sealed-paths', 20, 33) $$,
    $$ select tenant, event_type, case when event_type = 'a.done' then x0 # 1 else x0 end, x1, n, 33::bigint
       from streamseal._epoch_fold('answer-sealed-paths', 20, 33) order by 1, 2 $$,
    'a window [20, 33) covering epoch 2 wholly reads its sealed row (the corruption shows in a.done only)');
select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-sealed-paths', 21, 33) $$,
    $$ select tenant, event_type, x0, x1, n, 33::bigint from streamseal._epoch_fold('answer-sealed-paths', 21, 33) order by 1, 2 $$,
    'a window [21, 33) covering epoch 2 only partly folds it live (no corruption)');
select results_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('answer-sealed-paths', 10, 40) $$,
    $$ select tenant, event_type, case when event_type = 'a.done' then x0 # 1 else x0 end, x1, n
       from streamseal._epoch_fold('answer-sealed-paths', 10, 40) order by 1, 2 $$,
    'a window [10, 40) of several whole epochs composes their sealed rows, epoch 2''s included');
select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-sealed-paths', 0, 1000) $$,
    $$ select tenant, event_type, x0, x1, n, 46::bigint from streamseal._epoch_fold('answer-sealed-paths', 0, 1000) order by 1, 2 $$,
    'the whole-lane window [0, 1000) reads the intact sealed prefix, not the epoch rows (watermark 46)');

-- Phase 2: undo the epoch corruption, corrupt the sealed prefix's b.done row instead.
update streamseal.digest_epochs set x0 = x0 # 1
where origin = 'answer-sealed-paths' and epoch = 2 and event_type = 'a.done';
update streamseal.sealed_prefix set x1 = x1 # 2, n = n + 1
where origin = 'answer-sealed-paths' and event_type = 'b.done';

select results_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('answer-sealed-paths', 0, 1000) $$,
    $$ select tenant, event_type, x0, case when event_type = 'b.done' then x1 # 2 else x1 end,
              case when event_type = 'b.done' then n + 1 else n end
       from streamseal._epoch_fold('answer-sealed-paths', 0, 1000) order by 1, 2 $$,
    'the whole-lane window [0, 1000) reflects the corrupt prefix');
select results_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('answer-sealed-paths', 2, 1000) $$,
    $$ select tenant, event_type, x0, x1, n from streamseal._epoch_fold('answer-sealed-paths', 2, 1000) order by 1, 2 $$,
    'the window [2, 1000) starts inside epoch 0, composes epochs 1..3 from their rows and equals the live fold');
select results_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('answer-sealed-paths', 0, 40) $$,
    $$ select tenant, event_type, x0, case when event_type = 'b.done' then x1 # 2 else x1 end,
              case when event_type = 'b.done' then n + 1 else n end
       from streamseal._epoch_fold('answer-sealed-paths', 0, 40) order by 1, 2 $$,
    'the window [0, 40), exactly the sealed history, also reads the prefix');
select results_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('answer-sealed-paths', 0, 30) $$,
    $$ select tenant, event_type, x0, x1, n from streamseal._epoch_fold('answer-sealed-paths', 0, 30) order by 1, 2 $$,
    'the window [0, 30), a sealed sub-history, composes epoch rows and equals the live fold');

select * from finish();
rollback;
