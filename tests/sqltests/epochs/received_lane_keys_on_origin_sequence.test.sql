-- Invariant 5: a received lane's epochs key on the origin's sequence (epoch = origin_seq / width),
-- never on local arrival order, so a consumer's sealed folds line up with the origin's.
begin;
select plan(7);
select streamseal.set_service_name('epoch-received-keys');

-- Copies with origin_seq 101..135 from origin keyed-origin, ingested in a shuffled order
-- ((k * 13) mod 35 is a permutation of 0..34), in two batches.
create temp table planned on commit drop as
select 100 + k + 1 as origin_seq, (k * 13) % 35 as arrival,
       case when (k + 1) % 4 = 0 then 'b.seen' else 'a.seen' end as event_type
from generate_series(0, 34) k;
select streamseal.ingest(array(
    select streamseal_test.copy('keyed-origin', p.origin_seq, p.origin_seq - 100, 'k' || (p.origin_seq % 3), p.origin_seq,
                                p.event_type, event_id => streamseal_test.uid(p.origin_seq))
    from planned p where p.arrival >= 17 order by p.arrival));
select streamseal.ingest(array(
    select streamseal_test.copy('keyed-origin', p.origin_seq, p.origin_seq - 100, 'k' || (p.origin_seq % 3), p.origin_seq,
                                p.event_type, event_id => streamseal_test.uid(p.origin_seq))
    from planned p where p.arrival < 17 order by p.arrival));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'keyed-origin';

select isnt(
    array(select origin_seq from streamseal.events where origin = 'keyed-origin' order by local_id),
    array(select origin_seq from streamseal.events where origin = 'keyed-origin' order by origin_seq),
    'local arrival order differs from origin_seq order');

create temp table closed on commit drop as
select * from streamseal.close_epochs(width => 10, settle => interval '1 hour');

select results_eq(
    $$ select epoch, buckets from closed where buckets > 0 order by epoch $$,
    $$ values (10::bigint, 2), (11, 2), (12, 2) $$,
    'the epochs closed with events are 10, 11 and 12 (origin_seq / 10); epoch 13 holding 135 stays open');
select is(
    (select closed_through from streamseal.lane_epochs where origin = 'keyed-origin'), 13::bigint,
    'the frontier stands at closed_through 13');
select results_eq(
    $$ select distinct epoch from streamseal.digest_epochs where origin = 'keyed-origin' order by epoch $$,
    $$ values (10::bigint), (11), (12) $$,
    'sealed rows exist only for epochs 10, 11 and 12');

select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'keyed-origin' $$,
    $$ select (p.origin_seq / 10)::bigint as epoch, 't1'::text as tenant, p.event_type,
              bit_xor(hashtextextended(streamseal_test.uid(p.origin_seq)::text, 0)) as x0,
              bit_xor(hashtextextended(streamseal_test.uid(p.origin_seq)::text, 1)) as x1, count(*) as n
       from planned p where p.origin_seq < 130 group by 1, 2, 3 $$,
    'each sealed epoch folds exactly the copies whose origin_seq lies in it');
select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'keyed-origin' $$,
    $$ select 10::bigint, * from streamseal._epoch_fold('keyed-origin', 100, 110)
       union all select 11, * from streamseal._epoch_fold('keyed-origin', 110, 120)
       union all select 12, * from streamseal._epoch_fold('keyed-origin', 120, 130) $$,
    'each sealed epoch equals _epoch_fold over its origin_seq range');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'keyed-origin' $$,
    $$ select * from streamseal._epoch_fold('keyed-origin', 0, 130) $$,
    'the sealed prefix equals the fold of origin_seq [0, 130)');

select * from finish();
rollback;
