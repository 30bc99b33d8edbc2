-- Invariants 1 and 8: keyset pages of select_redelivery, each strictly after the previous page's
-- last (stream_id, stream_version), concatenate to exactly the unpaged selection: nothing
-- repeated, nothing skipped, whatever the page size, so a paged repair ships every event once.
begin;
select plan(7);
select streamseal.set_service_name('redeliver-keyset');

-- 62 requested events over 7 streams of uneven length, interleaved, with gaps in the versions,
-- plus 8 events of a type the request leaves out, sitting between them in the same streams.
create temp table planned on commit drop as
select i, 'stream-' || (i * 5 % 7) as stream_id, (i * 10)::bigint as version,
       case when i % 8 = 0 then 'noise' else 'order.placed' end as event_type
from generate_series(1, 70) as i;
select streamseal.append(array(
    select streamseal_test.own(p.stream_id, p.version, p.event_type, event_id => streamseal_test.uid(p.i))
    from planned p order by p.i));
select streamseal.stamp();

create temp table unpaged on commit drop as
select r.position, r.event_id, r.stream_id, r.stream_version
from streamseal.select_redelivery(array['t1'], array['order.placed'], max_events => 1000)
     with ordinality as r(event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, flags,
                          payload, metadata, occurred_at, position);

-- Walk pages of 4, each continuing after the last row of the one before; a short page is the last.
create temp table pages (page int, position bigint, event_id uuid, stream_id text, stream_version bigint) on commit drop;
do $$
declare
    page_no int := 0;
    last_stream text := null;
    last_version bigint := null;
    got int;
begin
    loop
        page_no := page_no + 1;
        insert into pages
        select page_no, r.position, r.event_id, r.stream_id, r.stream_version
        from streamseal.select_redelivery(array['t1'], array['order.placed'],
                                          after_stream => last_stream, after_version => last_version,
                                          max_events => 4)
             with ordinality as r(event_id, origin_seq, type_seq, tenant, stream_id, stream_version, event_type,
                                  flags, payload, metadata, occurred_at, position);
        get diagnostics got = row_count;
        exit when got < 4 or page_no >= 40;
        select p.stream_id, p.stream_version into last_stream, last_version
        from pages p where p.page = page_no order by p.position desc limit 1;
    end loop;
end
$$;

select is((select count(*)::int from unpaged), 62,
    'the unpaged selection holds all 62 requested events, none of the other type');
select results_eq(
    $$ select page, count(*)::int from pages group by page order by page $$,
    $$ select n, case when n < 16 then 4 else 2 end from generate_series(1, 16) as n $$,
    '62 events walk as 15 full pages of 4 and a last page of 2');
select results_eq(
    $$ select event_id from pages order by page, position $$,
    $$ select event_id from unpaged order by position $$,
    'the pages concatenated equal the unpaged selection exactly, in order');
select is_empty(
    $$ select event_id from pages group by event_id having count(*) > 1 $$,
    'no event appears on two pages');
select is_empty(
    $$ select event_id from unpaged except select event_id from pages $$,
    'no event of the selection is missing from the pages');
select is_empty(
    $$ select f.page
       from (select page, stream_id, stream_version from pages where position = 1) f
       join (select distinct on (page) page, stream_id, stream_version from pages order by page, position desc) l
         on l.page = f.page - 1
       where (f.stream_id, f.stream_version) <= (l.stream_id, l.stream_version) $$,
    'every page starts strictly after the previous page''s last (stream_id, stream_version)');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['order.placed'],
                                                           after_stream => 'stream-3', after_version => 25, max_events => 3) $$,
    $$ select event_id from unpaged where (stream_id, stream_version) > ('stream-3', 25) order by position limit 3 $$,
    'a cursor between two versions resumes at the stream''s next version, not the next stream');

select * from finish();
rollback;
