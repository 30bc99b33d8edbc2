-- Invariant 7's stamper, its cost per call (issue 20): a small batch (the relay's round, ~50
-- events) spent about half of each stamp() call planning, because every statement was planned
-- again on every call. stamp() keeps its plans for the session (stated on it, so relay_page's
-- forced custom plans do not reach it or the fold it calls), and the digest fold it calls is
-- PL/pgSQL (a SQL function with SET clauses plans its body again in every transaction).
-- A cost is not asserted by time here; these are the settings that carry it. The numbering
-- itself stays proven by the other stamp suites, run under these settings.
begin;
select plan(4);
select streamseal.set_service_name('stamp-plans');

select ok((select 'plan_cache_mode=auto' = any (p.proconfig) from pg_catalog.pg_proc p
           where p.oid = 'streamseal.stamp(integer)'::regprocedure),
    'stamp() states plan_cache_mode=auto: a caller''s forced custom plans do not reach its statements');
select isnt((select l.lanname from pg_catalog.pg_proc p join pg_catalog.pg_language l on l.oid = p.prolang
             where p.oid = 'streamseal._apply_digest_deltas(streamseal._digest_delta[])'::regprocedure),
    'sql', 'the digest fold stamp() calls is not a SQL function that plans its body again per transaction');
select isnt((select l.lanname from pg_catalog.pg_proc p join pg_catalog.pg_language l on l.oid = p.prolang
             where p.oid = 'streamseal._fold_changes(streamseal._counted_change[])'::regprocedure),
    'sql', 'nor is the fold it goes through');

-- Called from relay_page (which forces custom plans), stamp() still numbers and folds exactly.
select streamseal.append(array[
    streamseal_test.own('s', 1, 'item.added', event_id => streamseal_test.uid(1)),
    streamseal_test.own('s', 2, 'item.added', event_id => streamseal_test.uid(2))]);
select streamseal.relay_page(0, 10, 100);
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'stamp-plans' and stream_id = 's' $$,
    $$ select x0, x1, n from streamseal.recompute_digests('stamp-plans') where stream_id = 's' $$,
    'the fold of the stamped batch equals a recompute (invariant 4)');

select * from finish();
rollback;
