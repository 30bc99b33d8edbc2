-- Invariant 8: stream_digests_page pages a window by whole streams under a bucket cap; a non-null
-- resume_after means more remain, and following it visits every stream exactly once, so the
-- union of pages is the window's exact per-(stream, tenant, type) fold.
begin;
select plan(12);
select streamseal.set_service_name('answer-stream-pages');

-- Events in origin_seq order (appended in one batch, so seq = origin_seq). The window [3, 20)
-- holds, per stream, this many (tenant, type) buckets: s1 1, s2 2, s3 3, s4 1, s5 4, s6 1, s7 2;
-- seqs 1-2 and 20-22 lie outside it (s8 exists only outside it).
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
select streamseal.stamp();

-- The window's true fold per bucket, from the ids.
create temp table truth on commit drop as
select p.stream_id, p.tenant, p.event_type,
       bit_xor(hashtextextended(streamseal_test.uid(p.seq)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(p.seq)::text, 1)) as x1, count(*) as n
from planned p where p.seq >= 3 and p.seq < 20
group by 1, 2, 3;

-- Walk the window [3, 20) with at most 3 buckets a page, following resume_after.
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
        select page_no, d.* from streamseal.stream_digests_page('answer-stream-pages', null, 3, 20, after, 3) d;
        select max(p.resume_after) into after from pages p where p.page = page_no;
        exit when after is null or page_no >= 20;
    end loop;
end
$$;

select results_eq(
    $$ select page, string_agg(distinct stream_id, ',' order by stream_id), count(*)::int, max(resume_after)
       from pages group by page order by page $$,
    $$ values (1, 's1,s2', 3, 's2'), (2, 's3', 3, 's3'), (3, 's4', 1, 's4'), (4, 's5', 4, 's5'), (5, 's6,s7', 3, null) $$,
    'pages hold whole streams up to 3 buckets (a 4-bucket stream alone on its page); resume_after is the page''s last stream, null on the last page');
select is_empty(
    $$ select page from pages group by page
       having count(distinct resume_after) > 1 or count(*) filter (where resume_after is null) not in (0, count(*)) $$,
    'every row of a page carries the same resume_after');
select is_empty(
    $$ select stream_id from pages group by stream_id having count(distinct page) > 1 $$,
    'no stream is split across pages');
select is_empty(
    $$ select page from pages group by page having count(*) > 3 and count(distinct stream_id) > 1 $$,
    'a page exceeds 3 buckets only when it holds a single stream');
select is_empty($$ select * from pages where watermark <> 20 $$, 'every row carries the watermark 20');
select bag_eq(
    $$ select stream_id, tenant, event_type, x0, x1, n from pages $$,
    $$ select * from truth $$,
    'the union of the pages is the window''s exact per-(stream, tenant, type) fold, each bucket once');

select bag_eq(
    $$ select stream_id, tenant, event_type, x0, x1, n
       from streamseal.stream_digests_page('answer-stream-pages', array['b'], 3, 20, null, 100) $$,
    $$ select * from truth where event_type = 'b' $$,
    'the types filter keeps only the named types');
select results_eq(
    $$ select stream_id, resume_after from streamseal.stream_digests_page('answer-stream-pages', array['b'], 3, 20, null, 2) $$,
    $$ values ('s2'::text, 's3'::text), ('s3', 's3') $$,
    'paging a filtered window counts only the filtered buckets');
select results_eq(
    $$ select stream_id, tenant, event_type, n, watermark, resume_after
       from streamseal.stream_digests_page('answer-stream-pages', null, 3, 20, 's7', 3) $$,
    $$ values (null::text, null::text, null::text, 0::bigint, 20::bigint, null::text) $$,
    'a page after the last stream is one row with a null stream_id and no resume cursor');

-- Whole history: [0, 1000) covers every stamped event (watermark 23).
select bag_eq(
    $$ select stream_id, tenant, event_type, x0, x1, n
       from streamseal.stream_digests_page('answer-stream-pages', null, 0, 1000, null, 1000) $$,
    $$ select stream_id, tenant, event_type, x0, x1, n from streamseal.stream_digests
       where origin = 'answer-stream-pages' and n > 0 $$,
    'a whole-history window returns exactly the maintained stream_digests rows');
select bag_eq(
    $$ select stream_id, tenant, event_type, x0, x1, n
       from streamseal.stream_digests_page('answer-stream-pages', null, 1, 1000, null, 1000) $$,
    $$ select p.stream_id, p.tenant, p.event_type,
              bit_xor(hashtextextended(streamseal_test.uid(p.seq)::text, 0)) as x0,
              bit_xor(hashtextextended(streamseal_test.uid(p.seq)::text, 1)) as x1, count(*) as n
       from planned p group by 1, 2, 3 $$,
    'a whole-history window from 1 equals an independent fold of every event');
select results_eq(
    $$ select distinct watermark, resume_after
       from streamseal.stream_digests_page('answer-stream-pages', null, 0, 1000, null, 1000) $$,
    $$ values (23::bigint, null::text) $$,
    'the whole-history page is complete and capped at watermark 23');

select * from finish();
rollback;
