-- Invariant 9: a bucket still moving is not news. At stream level a differing bucket whose local
-- stream_digests row moved within the settle window comes back skipped (in flight: the caller
-- neither ledgers nor repairs it yet); one that has been still longer, or that this store never
-- held, is reported. A zero settle window holds nothing. At type level settle never narrows the
-- fold: a fresh arrival that completes a type makes it match, so no drill-down is wasted on it.
begin;
select plan(6);
select streamseal.set_service_name('cmp-settle');

-- The origin holds old-1 (seqs 1, 2), new-1 (3, 4), gone-1 (5) and extra-1 (6) in [1, 10).
-- This store: old-1 lacks seq 2 and has been still for 2 hours; new-1 lacks seq 4 but seq 3
-- arrived just now; gone-1 never arrived; fresh-1 holds seq 9, which the origin deleted, and
-- moved just now (above everything settled here); extra-1 holds seq 6 and an extra at seq 8,
-- still for 2 hours.
create temp table origin_store (seq int, stream_id text) on commit drop;
insert into origin_store values (1, 'old-1'), (2, 'old-1'), (3, 'new-1'), (4, 'new-1'), (5, 'gone-1'), (6, 'extra-1');
select streamseal.ingest(array[
    streamseal_test.copy('cmp-settle-origin', 1, 1, 'old-1', 1, 'settle.type', event_id => streamseal_test.uid(1)),
    streamseal_test.copy('cmp-settle-origin', 6, 6, 'extra-1', 6, 'settle.type', event_id => streamseal_test.uid(6)),
    streamseal_test.copy('cmp-settle-origin', 8, 8, 'extra-1', 8, 'settle.type', event_id => streamseal_test.uid(8))]);
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'cmp-settle-origin';
update streamseal.stream_digests set updated_at = now() - interval '2 hours' where origin = 'cmp-settle-origin';
select streamseal.ingest(array[
    streamseal_test.copy('cmp-settle-origin', 3, 3, 'new-1', 3, 'settle.type', event_id => streamseal_test.uid(3)),
    streamseal_test.copy('cmp-settle-origin', 9, 9, 'fresh-1', 9, 'settle.type', event_id => streamseal_test.uid(9))]);

create temp table answer on commit drop as
select o.stream_id, 't1'::text as tenant, 'settle.type'::text as event_type,
       bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(o.seq)::text, 1)) as x1, count(*) as n
from origin_store o group by o.stream_id;

create function pg_temp.compare(settle interval) returns table (stream_id text, reason text, skipped boolean) language sql as $$
    select c.stream_id, c.reason, c.skipped
    from streamseal.compare_stream_digests('cmp-settle-origin', 1, 10,
        array(select stream_id from answer order by stream_id), array(select tenant from answer order by stream_id),
        array(select event_type from answer order by stream_id), array(select x0 from answer order by stream_id),
        array(select x1 from answer order by stream_id), array(select n from answer order by stream_id), settle) c
$$;

select results_eq(
    $$ select * from pg_temp.compare(interval '5 minutes') $$,
    $$ values ('extra-1'::text, 'local_extra'::text, false), ('fresh-1', 'local_extra', true), ('gone-1', 'deficit', false),
              ('new-1', 'deficit', true), ('old-1', 'deficit', false) $$,
    'settle 5 minutes: the buckets that moved just now (new-1, fresh-1) are skipped, the still and the never-held ones reported');
select results_eq(
    $$ select stream_id from pg_temp.compare(interval '5 minutes') where not skipped $$,
    $$ select stream_id from pg_temp.compare(interval '0') where stream_id in ('extra-1', 'gone-1', 'old-1') $$,
    'what settle does not skip is reported exactly as without settle');
select is_empty(
    $$ select * from pg_temp.compare(interval '0') where skipped $$,
    'settle 0 skips nothing: a zero window holds no bucket');
select results_eq(
    $$ select stream_id, skipped from pg_temp.compare(interval '3 hours') $$,
    $$ values ('extra-1'::text, true), ('fresh-1', true), ('gone-1', false), ('new-1', true), ('old-1', true) $$,
    'a settle window longer than the buckets'' stillness skips them too; a bucket this store never held has not moved here');

-- Type level: once the origin answers what this store holds, the type matches however wide the
-- settle window: the fresh arrivals count, seq 9 too, though it lies above the local settled max
-- where type_digests stops (the fold is never narrowed).
create temp table held_answer on commit drop as
select 't1'::text as tenant, 'settle.type'::text as event_type,
       bit_xor(hashtextextended(event_id::text, 0)) as x0, bit_xor(hashtextextended(event_id::text, 1)) as x1, count(*) as n
from streamseal.events where origin = 'cmp-settle-origin' and origin_seq < 10;
select is_empty(
    $$ select * from streamseal.compare_type_digests('cmp-settle-origin', 1, 10,
           array(select tenant from held_answer), array(select event_type from held_answer),
           array(select x0 from held_answer), array(select x1 from held_answer), array(select n from held_answer),
           settle => interval '1 hour') $$,
    'type level with settle 1 hour: arrivals stored just now still count, so a type this store holds whole matches');
select results_eq(
    $$ select event_type, local_n, origin_n, reason
       from streamseal.compare_type_digests('cmp-settle-origin', 1, 10,
           array(select tenant from answer limit 1), array['settle.type'],
           array[(select bit_xor(x0) from answer)], array[(select bit_xor(x1) from answer)], array[(select sum(n)::bigint from answer)],
           settle => interval '1 hour') $$,
    $$ values ('settle.type'::text, 5::bigint, 6::bigint, 'deficit'::text) $$,
    'type level: a type that differs is returned whatever settle says: only the drill-down can tell in flight from lost');

select * from finish();
rollback;
