-- Invariant 1 at the stamper's pace (issue 16: stamper lag p99 < 20 ms): the look a loop takes
-- before it sleeps, and the stamp's claim, read the queue by its key, never by a sequential scan.
-- The queue churns (a row per own event, deleted by the stamp that numbers it), so until vacuum
-- comes its heap is mostly dead rows, and `exists (select from unstamped)` as a sequential scan
-- waded through all of them: 40-98 ms a look at bench write's full size, taken every few
-- milliseconds, which held the stamper back 60-120 ms at a time (lag p99 63-73 ms). By the key,
-- a look starts at the lowest entry (entries of dead rows are marked and skipped after a visit).
begin;
select plan(5);
select streamseal.set_service_name('stamp-sleep-key');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 13), i / 13 + 1, 'thing.a', event_id => streamseal_test.uid(i))
    from generate_series(1, 3000) i order by i));
select is((select stamped from streamseal.stamp()), 3000, 'fixture: 3000 own events stamped, their queue rows deleted');
select streamseal.append(array[streamseal_test.own('late', 1, event_id => streamseal_test.uid(9001))]);

create function pg_temp.queue_seq_scans() returns bigint language sql as $$
    select coalesce((select s.seq_scan from pg_catalog.pg_stat_xact_user_tables s
                     where s.schemaname = 'streamseal' and s.relname = 'unstamped'), 0) $$;
create temp table scans (what text, n bigint) on commit drop;

insert into scans select 'before', pg_temp.queue_seq_scans();
select is(streamseal.stamper_sleep_arm(), 'work', 'one event waits behind 3000 deleted queue rows: stamp before sleeping');
insert into scans select 'look', pg_temp.queue_seq_scans();
select results_eq($$ select stamped from streamseal.stamp() $$, $$ values (1) $$, 'stamped');
insert into scans select 'stamp', pg_temp.queue_seq_scans();
select is(streamseal.stamper_sleep_arm(), 'armed', 'nothing waits: sleep holding the lock');
insert into scans select 'armed', pg_temp.queue_seq_scans();
select streamseal.stamper_sleep_release();

select is((select pg_catalog.array_agg(s.n - p.n order by s.what)
           from scans s join scans p on (s.what, p.what) in (('look', 'before'), ('stamp', 'look'), ('armed', 'stamp'))),
    array[0, 0, 0]::bigint[], 'no sequential scan of the queue: by the look that finds work, the one that arms, or the claim');

select * from finish();
rollback;
