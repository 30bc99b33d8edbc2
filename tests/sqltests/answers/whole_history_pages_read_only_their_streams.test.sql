-- Invariant 8 (an audit's cost grows with what it reads, not with the lane): a whole-history
-- stream page reads the streams it returns (and the next one), not every bucket of the lane.
-- (Before: every page ranked all remaining buckets of the lane, O(lane) a page and O(lane^2 /
-- page) a walk: 30-40 ms a page at 20 000 buckets.) The pages keep their rules: whole streams up
-- to the bucket cap, a larger stream alone, resume_after until the last.
begin;
select plan(5);
select streamseal.set_service_name('answer-history-pages');

create temp table planned (seq int, stream_id text, version int, event_type text, tenant text) on commit drop;
insert into planned values
    (1, 's1', 1, 'a', 't1'), (2, 's5', 1, 'a', 't1'),
    (3, 's1', 2, 'a', 't1'), (4, 's2', 1, 'a', 't1'), (5, 's2', 2, 'b', 't1'),
    (6, 's3', 1, 'a', 't1'), (7, 's3', 2, 'b', 't1'), (8, 's3', 3, 'a', 't2'),
    (9, 's4', 1, 'b', 't1'), (10, 's5', 2, 'a', 't1'), (11, 's5', 3, 'b', 't1'),
    (12, 's5', 4, 'a', 't2'), (13, 's5', 5, 'b', 't2'), (14, 's6', 1, 'a', 't1'),
    (15, 's7', 1, 'a', 't1'), (16, 's7', 2, 'a', 't2'), (17, 's2', 3, 'a', 't1'),
    (18, 's5', 6, 'a', 't1'), (19, 's6', 2, 'a', 't1'),
    (20, 's8', 1, 'a', 't1'), (21, 's2', 4, 'b', 't2'), (22, 's1', 3, 'b', 't1');
select streamseal.append(array(
    select streamseal_test.own(p.stream_id, p.version, p.event_type, p.tenant, event_id => streamseal_test.uid(p.seq))
    from planned p order by p.seq));
select count(*) from streamseal.stamp();


-- Walk the whole history with at most 3 buckets a page, following resume_after.
create temp table pages (page int, stream_id text, tenant text, event_type text, x0 bigint, x1 bigint, n bigint,
                         watermark bigint, resume_after text) on commit drop;
do $$
declare
    page_no int := 0;
    after text := null;
begin
    loop
        page_no := page_no + 1;
        insert into pages
        select page_no, d.* from streamseal.stream_digests_page('answer-history-pages', null, 0, 1000, after, 3) d;
        select max(p.resume_after) into after from pages p where p.page = page_no;
        exit when after is null or page_no >= 20;
    end loop;
end
$$;

select results_eq(
    $$ select page, string_agg(distinct stream_id, ',' order by stream_id), count(*)::int, max(resume_after)
       from pages group by page order by page $$,
    $$ values (1, 's1', 2, 's1'), (2, 's2', 3, 's2'), (3, 's3', 3, 's3'), (4, 's4', 1, 's4'), (5, 's5', 4, 's5'),
              (6, 's6,s7', 3, 's7'), (7, 's8', 1, null) $$,
    'whole-history pages hold whole streams up to 3 buckets (a 4-bucket stream alone); resume_after until the last');
select bag_eq(
    $$ select stream_id, tenant, event_type, x0, x1, n from pages $$,
    $$ select stream_id, tenant, event_type, x0, x1, n from streamseal.stream_digests
       where origin = 'answer-history-pages' and n > 0 $$,
    'the union of the pages is the maintained stream_digests, each bucket once');
select results_eq(
    $$ select stream_id, resume_after from streamseal.stream_digests_page('answer-history-pages', array['b'], 0, 1000, null, 2) $$,
    $$ values ('s1'::text, 's1'::text) $$,
    'a filtered whole-history page counts only the filtered buckets (s1 has 1 of type b, s2 2: s1 alone)');

-- A long lane after them: 4000 more buckets (streams z0000..z3999, one bucket each).
select streamseal.append(array(
    select streamseal_test.own('z' || lpad(i::text, 4, '0'), 1, 'a', event_id => streamseal_test.uid(1000 + i))
    from generate_series(0, 3999) i));
select count(*) from streamseal.stamp();
create temp table read_before on commit drop as
select streamseal_test.rows_read('stream_digests') as n;
create temp table first_page on commit drop as
select * from streamseal.stream_digests_page('answer-history-pages', null, 0, 100000, null, 3);
create temp table read_after on commit drop as
select streamseal_test.rows_read('stream_digests') as n;
select results_eq($$ select stream_id, resume_after from first_page $$, $$ values ('s1'::text, 's1'::text), ('s1', 's1') $$,
    'fixture: the first page of the long lane is s1, resume after it');
select cmp_ok((select n from read_after) - (select n from read_before), '<=', 50::bigint,
    'the page read a few streams'' buckets, not the 4000-bucket lane');

select * from finish();
rollback;
