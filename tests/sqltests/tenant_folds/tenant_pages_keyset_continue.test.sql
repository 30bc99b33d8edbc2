-- Invariant 8 (and 14): a mismatched type is drilled into by tenant pages, whole tenants in tenant
-- order, each page carrying the cursor to resume after; following the cursors visits every
-- granted (tenant, type) of the scope exactly once, and the last page's cursor is null.
begin;
select plan(6);
select streamseal.set_service_name('pages-origin');

-- 40 events: tenants t00..t09 (i % 10), types a.happened (i odd) and b.happened (i even), so
-- each tenant holds one type only: odd tenants a.happened, even tenants b.happened.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 10), i, event_type => case when i % 2 = 1 then 'a.happened' else 'b.happened' end,
                               tenant => 't0' || (i % 10), event_id => streamseal_test.uid(6000 + i))
    from generate_series(1, 40) i order by i));
select streamseal.stamp();
select streamseal.grant_redelivery_all_tenants('pages-consumer', array['a.happened', 'b.happened']);

select results_eq(
    $$ select tenant, event_type, n, resume_after from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                                                      array['a.happened', 'b.happened'], array[null, null]::text[], null, 3) $$,
    $$ values ('t00'::text, 'b.happened'::text, 4::bigint, 't02'::text), ('t01', 'a.happened', 4, 't02'), ('t02', 'b.happened', 4, 't02') $$,
    'the first page holds whole tenants up to the page size and the cursor after its last tenant');
select results_eq(
    $$ select tenant from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                                                      array['a.happened', 'b.happened'], array[null, null]::text[], 't02', 3) $$,
    $$ values ('t03'::text), ('t04'), ('t05') $$,
    'the next page continues strictly after the cursor');
select results_eq(
    $$ with recursive walk(after, page, tenants) as (
           select null::text, 0, '{}'::text[]
           union all
           select (select max(p.resume_after) from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                       array['a.happened'], array[null]::text[], w.after, 2) p),
                  w.page + 1,
                  w.tenants || array(select p.tenant from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                       array['a.happened'], array[null]::text[], w.after, 2) p where p.tenant is not null order by 1)
           from walk w where w.page = 0 or w.after is not null)
       select page, tenants from walk where after is null and page > 0 $$,
    $$ values (3, array['t01', 't03', 't05', 't07', 't09']) $$,
    'following the cursors visits every tenant of the mismatched type once, and ends with a null cursor');
select results_eq(
    $$ select tenant, watermark, resume_after from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                                                      array['a.happened'], array[null]::text[], 't09', 2) $$,
    $$ values (null::text, 41::bigint, null::text) $$,
    'a page past the last tenant answers the watermark alone');
select throws_ok(
    $$ select * from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                                                           array['a.happened'], array[null]::text[], null, 0) $$,
    '22023', 'answer_tenant_digests_page: max_digests 0 is invalid: expected a positive page size',
    'a page size below one is refused');

-- The single-tenant service's tenant '' (two types) at a page size of 1: the first page takes
-- the next tenant too, so its cursor is never '' (which the wire reads as "from the first").
select streamseal.append(array[
    streamseal_test.own('u1', 1, event_type => 'a.happened', tenant => '', event_id => streamseal_test.uid(6101)),
    streamseal_test.own('u2', 1, event_type => 'b.happened', tenant => '', event_id => streamseal_test.uid(6102))]);
select streamseal.stamp();
select results_eq(
    $$ select tenant, event_type, resume_after from streamseal.answer_tenant_digests_page('pages-consumer', 'pages-origin', 0, 100,
                                                      array['a.happened', 'b.happened'], array[null, null]::text[], null, 1) $$,
    $$ values (''::text, 'a.happened'::text, 't00'::text), ('', 'b.happened', 't00'), ('t00', 'b.happened', 't00') $$,
    'a page starting at tenant '''' takes the next tenant too, so the cursor is never ''''');

select * from finish();
rollback;
