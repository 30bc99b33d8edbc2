-- Invariant 4: a repaired copy landing in an already closed epoch of a received lane is folded into
-- that epoch and the sealed prefix at once, and does not move this service's origin generation.
begin;
select plan(9);
select streamseal.set_service_name('epoch-late-arrival');

-- Copies 1..35 from late-origin with two gaps: 14 (epoch 1, a type the epoch has not seen yet)
-- and 27 (epoch 2, an existing bucket).
select streamseal.ingest(array(
    select streamseal_test.copy('late-origin', i, i, 'k' || (i % 3), i, 'a.seen', event_id => streamseal_test.uid(i))
    from generate_series(1, 35) i where i not in (14, 27)));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'late-origin';

select results_eq(
    $$ select epoch from streamseal.close_epochs(width => 10, settle => interval '1 hour') order by epoch $$,
    $$ values (0::bigint), (1), (2) $$,
    'epochs 0, 1 and 2 close over the gaps');
select is(
    (select sum(n)::int from streamseal.sealed_prefix where origin = 'late-origin'), 27,
    'the sealed prefix counts the 27 copies present below 30');

create temp table generation_before on commit drop as select streamseal.origin_generation() as g;

-- The repair: the two missing copies arrive now, in one batch.
select streamseal.ingest(array[
    streamseal_test.copy('late-origin', 27, 27, 'k0', 27, 'a.seen', event_id => streamseal_test.uid(27)),
    streamseal_test.copy('late-origin', 14, 1, 'k2', 14, 'rare.seen', event_id => streamseal_test.uid(14))]);

-- Truth: every id 1..29, by epoch and type.
create temp table truth on commit drop as
select (i / 10)::bigint as epoch, 't1'::text as tenant,
       case when i = 14 then 'rare.seen' else 'a.seen' end as event_type,
       bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)) as x1, count(*) as n
from generate_series(1, 29) i group by 1, 2, 3;

select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'late-origin' $$,
    $$ select * from truth $$,
    'the closed epochs now fold the repaired copies (a new rare.seen row in epoch 1, a moved a.seen row in epoch 2)');
select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'late-origin' $$,
    $$ select 0::bigint, * from streamseal._epoch_fold('late-origin', 0, 10)
       union all select 1, * from streamseal._epoch_fold('late-origin', 10, 20)
       union all select 2, * from streamseal._epoch_fold('late-origin', 20, 30) $$,
    'each closed epoch equals _epoch_fold over its range');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'late-origin' $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n from truth group by 1, 2 $$,
    'the sealed prefix includes the repaired copies');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('late-origin', 0, 30) $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n from truth group by 1, 2 $$,
    'the sealed answer for [0, 30) includes the repaired copies');
select is(streamseal.origin_generation(), (select g from generation_before),
    'a repair of another origin''s lane does not move this service''s generation');
select is(streamseal_test.digest_drift(), 0::bigint, 'stream digests equal a recompute');
select results_eq(
    $$ select * from streamseal.verify_digest_epochs() $$,
    $$ values ('late-origin'::text, 3, 0, false) $$,
    'the sweep finds no drift in the closed epochs');

select * from finish();
rollback;
