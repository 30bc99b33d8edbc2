-- Invariant 8: windows are half-open [from, to) and compose: for a < b < c the per-bucket XOR and
-- sum of [a, b) and [b, c) equal [a, c), whether the split points fall on epoch boundaries or not,
-- so consecutive answers never count an event twice or skip one.
begin;
select plan(5);
select streamseal.set_service_name('answer-compose');

-- 55 own events over 2 tenants x 3 types; width 10 closes epochs 0..4, epoch 5 (holding 55) stays open.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 4), i, (array['a.done', 'b.done', 'c.done'])[i % 3 + 1],
                               case when i % 5 < 2 then 't1' else 't2' end, event_id => streamseal_test.uid(i))
    from generate_series(1, 55) i order by i));
select streamseal.stamp();
select is((select count(*)::int from streamseal.close_epochs(width => 10)), 5, 'setup: epochs 0..4 close');

-- Split points: on boundaries, off boundaries, spanning sealed and open epochs, empty parts,
-- and a c beyond the settled max.
create temp table splits (a bigint, b bigint, c bigint) on commit drop;
insert into splits values
    (0, 20, 56), (0, 10, 20), (10, 30, 50), (3, 20, 47), (7, 13, 41), (1, 29, 31),
    (15, 40, 56), (20, 20, 30), (0, 50, 1000), (25, 52, 55), (33, 36, 39), (0, 1, 2);

select bag_eq(
    $$ select s.a, s.b, s.c, d.tenant, d.event_type, bit_xor(d.x0) as x0, bit_xor(d.x1) as x1, sum(d.n)::bigint as n
       from splits s
       cross join lateral (select * from streamseal.type_digests('answer-compose', s.a, s.b)
                           union all
                           select * from streamseal.type_digests('answer-compose', s.b, s.c)) d
       where d.tenant is not null
       group by 1, 2, 3, 4, 5
       having bit_xor(d.x0) <> 0 or bit_xor(d.x1) <> 0 or sum(d.n) <> 0 $$,
    $$ select s.a, s.b, s.c, d.tenant, d.event_type, d.x0, d.x1, d.n
       from splits s cross join lateral streamseal.type_digests('answer-compose', s.a, s.c) d
       where d.tenant is not null $$,
    'for every split a < b < c, [a, b) composed with [b, c) equals [a, c) per bucket');
select bag_eq(
    $$ select s.a, s.c, d.tenant, d.event_type, d.x0, d.x1, d.n
       from splits s cross join lateral streamseal.type_digests('answer-compose', s.a, s.c) d
       where d.tenant is not null $$,
    $$ select s.a, s.c, f.tenant, f.event_type, f.x0, f.x1, f.n
       from splits s cross join lateral streamseal._epoch_fold('answer-compose', s.a, s.c) f $$,
    'every [a, c) equals _epoch_fold over the same range');
select bag_eq(
    $$ select s.a, s.c, d.tenant, d.event_type, d.x0, d.x1, d.n
       from splits s cross join lateral streamseal.type_digests('answer-compose', s.a, s.c) d
       where d.tenant is not null $$,
    $$ select s.a, s.c, case when i % 5 < 2 then 't1' else 't2' end as tenant,
              (array['a.done', 'b.done', 'c.done'])[i % 3 + 1] as event_type,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)) as x0,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)) as x1, count(*) as n
       from splits s cross join generate_series(1, 55) i
       where i >= s.a and i < s.c
       group by 1, 2, 3, 4 $$,
    'every [a, c) equals an independent fold of the ids with origin_seq in [a, c)');
select is_empty(
    $$ select s.a, s.b from splits s cross join lateral streamseal.type_digests('answer-compose', s.a, s.b) d
       where d.watermark <> s.b $$,
    'every first part [a, b) reports watermark b, the from of the second part');

select * from finish();
rollback;
