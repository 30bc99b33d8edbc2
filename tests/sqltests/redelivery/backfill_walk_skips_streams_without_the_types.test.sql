-- Invariants 8 and 1, issue 18: a backfill's walk (a state-only selection) reads only the
-- streams that hold an asked type, found in stream_digests, so a page costs O(page) even when
-- the lane holds long streams of other types before (or between) them (bench backfill: the
-- origin's live stream of another type sorted first and its first page read ~60 000 rows, 1 s
-- of the run and as long again paced); and skipping loses nothing: every page concatenated is
-- exactly the selection, at-most-once occurrences of an opted-in type (never in a digest) and a
-- plain repair's ephemeral events (never in a digest) included. Rows read come from
-- streamseal_test.rows_read.
begin;
select plan(8);
select streamseal.set_service_name('redeliver-skip');

-- 6000 events of another type in a stream sorting first; a stream mixing both types; 500
-- events of the asked type over 50 streams; a stream of only at-most-once occurrences and one of
-- only ephemeral events of the asked type (neither counted in stream_digests); another long
-- stream of the other type between them.
select streamseal.append(array(
    select streamseal_test.own('a-live', i, 'bench.c') from generate_series(1, 6000) i));
select streamseal.append(array(
    select streamseal_test.own('m-mixed', i, case when i % 2 = 0 then 'bench.a' else 'bench.c' end)
    from generate_series(1, 20) i));
select streamseal.append(array(
    select streamseal_test.own('n-amo', i, 'bench.a', flags => 2) from generate_series(1, 3) i));
select streamseal.append(array(
    select streamseal_test.own('s' || lpad((i % 50)::text, 2, '0'), i / 50 + 1, 'bench.a')
    from generate_series(0, 499) i));
select streamseal.append(array(
    select streamseal_test.own('t-other', i, 'bench.c') from generate_series(1, 3000) i));
select streamseal.append(array(
    select streamseal_test.own('z-eph', i, 'bench.a', flags => 1) from generate_series(1, 2) i));
select streamseal.stamp(20000);
select is((select count(*)::int from streamseal.own_numbers), 9525, 'fixture: 9525 own events numbered');

create temp table wanted on commit drop as
select n.event_id, e.stream_id, e.stream_version, e.flags
from streamseal.events e join streamseal.own_numbers n using (event_id)
where n.event_type = 'bench.a';

-- A backfill's first page from the lane's start, and one from a cursor inside the long stream.
select streamseal_test.measure('first page', $q$ select * from streamseal.select_redelivery(array['t1'], array['bench.a'],
    max_events => 100, state_only => true) $q$);
select streamseal_test.measure('from a cursor', $q$ select * from streamseal.select_redelivery(array['t1'], array['bench.a'],
    after_stream => 'a-live', after_version => 3000, max_events => 100, state_only => true) $q$);
select results_eq($$ select rows_returned from pg_temp.reads order by what $$, $$ values (100), (100) $$,
    'each page is full');
select ok((select events < 1000 from pg_temp.reads where what = 'first page'),
    'the first page skips the 6000 events of the other type: read ' || (select events from pg_temp.reads where what = 'first page'));
select ok((select events < 1000 from pg_temp.reads where what = 'from a cursor'),
    'a page from a cursor inside the other type''s stream skips its rest: read ' || (select events from pg_temp.reads where what = 'from a cursor'));

-- Every page of the backfill, each after the last one's end, concatenates to exactly the selection.
create temp table walk (event_id uuid, stream_id text, stream_version bigint) on commit drop;
create function pg_temp.walked(state_only boolean, amo text[]) returns table (event_id uuid, stream_id text, stream_version bigint)
language plpgsql as $$
declare
    last_stream text;
    last_version bigint;
    got int;
begin
    truncate walk;
    loop
        insert into walk
        select r.event_id, r.stream_id, r.stream_version
        from streamseal.select_redelivery(array['t1'], array['bench.a'], after_stream => last_stream, after_version => last_version,
             max_events => 64, state_only => walked.state_only, at_most_once_types => walked.amo) r;
        get diagnostics got = row_count;
        exit when got < 64;
        select w.stream_id, w.stream_version into last_stream, last_version
        from walk w order by w.stream_id desc, w.stream_version desc limit 1;
    end loop;
    return query select w.event_id, w.stream_id, w.stream_version from walk w order by w.stream_id, w.stream_version;
end
$$;

select results_eq($$ select event_id from pg_temp.walked(true, null) $$,
    $$ select event_id from wanted where flags = 0 order by stream_id, stream_version $$,
    'a backfill''s pages ship every event of the type once, in stream order');
select is((select count(*)::int from pg_temp.walked(true, null)), 510, 'fixture: 510 of them');
select results_eq($$ select event_id from pg_temp.walked(true, array['bench.a']) $$,
    $$ select event_id from wanted where flags in (0, 2) order by stream_id, stream_version $$,
    'with the type opted in, its at-most-once occurrences (in no digest) are shipped too');
select results_eq($$ select event_id from pg_temp.walked(false, null) $$,
    $$ select event_id from wanted where flags in (0, 1) order by stream_id, stream_version $$,
    'a plain repair''s wide walk still ships the ephemeral events (in no digest)');

select * from finish();
rollback;
