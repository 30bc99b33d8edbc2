-- Invariant 11: digests answered to a service cover only the (tenant, type) pairs it is granted,
-- at type level and stream level, so an audit never learns or compares another tenant; a window
-- or page holding nothing granted still answers its watermark (and cursor).
begin;
select plan(6);
select streamseal.set_service_name('answer-grants');

-- 20 events: acme when i is odd, globex when even; type thing.happened; streams s(i % 2)
-- (so s1 is acme's and s0 globex's).
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 2), i, tenant => case when i % 2 = 1 then 'acme' else 'globex' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 20) i order by i));
select streamseal.stamp();
select streamseal.grant_redelivery('billing', array['thing.happened'], array['acme']);

select results_eq(
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.answer_type_digests('billing', 'answer-grants', 0, 100) $$,
    $$ select tenant, event_type, x0, x1, n, watermark from streamseal.type_digests('answer-grants', 0, 100) where tenant = 'acme' $$,
    'the type-level answer is the granted tenant''s digest alone');
select results_eq(
    $$ select tenant, event_type, n, watermark from streamseal.answer_type_digests('shipping', 'answer-grants', 0, 100) $$,
    $$ values (null::text, null::text, 0::bigint, 21::bigint) $$,
    'a service granted nothing gets the watermark alone');
select results_eq(
    $$ select stream_id, tenant, n from streamseal.answer_stream_digests_page('billing', 'answer-grants', null, 0, 100, null, 10) $$,
    $$ values ('s1'::text, 'acme'::text, 10::bigint) $$,
    'the stream-level page holds the granted tenant''s buckets alone');
select results_eq(
    $$ select stream_id, watermark, resume_after from streamseal.answer_stream_digests_page('billing', 'answer-grants', null, 0, 100, null, 1) $$,
    $$ values (null::text, 21::bigint, 's0'::text) $$,
    'a page of only another tenant''s stream answers the watermark and the cursor, no bucket');
select results_eq(
    $$ select stream_id, tenant from streamseal.answer_stream_digests_page('billing', 'answer-grants', null, 0, 100, 's0', 1) $$,
    $$ values ('s1'::text, 'acme'::text) $$,
    'and the next page continues to the granted stream');
select streamseal.grant_redelivery_all_tenants('auditor', array['thing.happened']);
select is((select count(*)::int from streamseal.answer_type_digests('auditor', 'answer-grants', 0, 100)), 2,
    'an all-tenant grant is answered every tenant');

select * from finish();
rollback;
