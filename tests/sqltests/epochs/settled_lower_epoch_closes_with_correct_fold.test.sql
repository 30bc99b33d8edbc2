-- Invariant 4: a closed epoch's maintained fold (digest_epochs, sealed_prefix) equals a recompute
-- from the store; close_epochs closes only epochs lying wholly below the own lane's settled max.
begin;
select plan(8);
select streamseal.set_service_name('epoch-settled-close');

-- 35 own events over 2 tenants x 2 types x 3 streams; appended in order, so event i gets origin_seq i.
create temp table planned on commit drop as
select i, 's' || (i % 3) as stream_id,
       case when i % 5 = 0 then 'b.happened' else 'a.happened' end as event_type,
       case when i % 2 = 0 then 't1' else 't2' end as tenant
from generate_series(1, 35) i;
select streamseal.append(array(
    select streamseal_test.own(p.stream_id, p.i, p.event_type, p.tenant, event_id => streamseal_test.uid(p.i))
    from planned p order by p.i));
select streamseal.stamp();

-- The true fold of every epoch, from the ids alone (epoch = origin_seq / 10).
create temp table truth on commit drop as
select (p.i / 10)::bigint as epoch, p.tenant, p.event_type,
       bit_xor(hashtextextended(streamseal_test.uid(p.i)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(p.i)::text, 1)) as x1,
       count(*) as n
from planned p
group by 1, 2, 3;

select is(
    (select count(*)::int from streamseal.numbered_events e join planned p on streamseal_test.uid(p.i) = e.event_id
     where e.origin_seq = p.i),
    35, 'stamping numbered event i with origin_seq i');

select results_eq(
    $$ select origin, epoch, buckets, forced from streamseal.close_epochs(width => 10) order by epoch $$,
    $$ values ('epoch-settled-close'::text, 0::bigint, 3, false), ('epoch-settled-close', 1, 4, false),
              ('epoch-settled-close', 2, 4, false) $$,
    'close_epochs closes epochs 0, 1 and 2 (with their bucket counts) and leaves epoch 3, holding the settled max 35, open');

select results_eq(
    $$ select width, closed_through, blocked_since from streamseal.lane_epochs where origin = 'epoch-settled-close' $$,
    $$ values (10::bigint, 3::bigint, null::timestamptz) $$,
    'the lane frontier is pinned at width 10 and closed_through 3');

select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'epoch-settled-close' $$,
    $$ select 0::bigint, * from streamseal._epoch_fold('epoch-settled-close', 0, 10)
       union all select 1, * from streamseal._epoch_fold('epoch-settled-close', 10, 20)
       union all select 2, * from streamseal._epoch_fold('epoch-settled-close', 20, 30) $$,
    'each closed epoch''s rows equal _epoch_fold over its range');

select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'epoch-settled-close' $$,
    $$ select epoch, tenant, event_type, x0, x1, n from truth where epoch < 3 $$,
    'each closed epoch''s rows equal an independent fold of its event ids');

select is_empty(
    $$ select * from streamseal.digest_epochs where origin = 'epoch-settled-close' and epoch >= 3 $$,
    'the open epoch 3 has no sealed rows');

select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'epoch-settled-close' $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n from truth where epoch < 3 group by 1, 2 $$,
    'the sealed prefix is the fold of origin_seq [0, 30)');

select is(
    (select sum(n)::int from streamseal.digest_epochs where origin = 'epoch-settled-close'), 29,
    'the closed epochs count the 29 events with origin_seq 1..29');

select * from finish();
rollback;
