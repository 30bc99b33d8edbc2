-- Invariant 4: ephemeral (flag 1) and at-most-once (flag 2) events, set through the real append and
-- ingest paths, stay outside digest_epochs, sealed_prefix and type_digests; state-only (4) counts.
begin;
select plan(8);
select streamseal.set_service_name('epoch-flags');

-- 25 events per lane; flags cycle 0, 1, 2, 4, 3. The type only.flagged holds flagged events only.
create temp table planned on commit drop as
select i, (array[0, 1, 2, 4, 3])[i % 5 + 1] as flags,
       case when i % 7 = 0 then 'only.flagged' when i % 2 = 0 then 'a.made' else 'b.made' end as event_type
from generate_series(1, 25) i;
update planned set flags = 1 where event_type = 'only.flagged' and flags & 3 = 0;

select streamseal.append(array(
    select streamseal_test.own('own' || (p.i % 2), p.i, p.event_type, flags => p.flags, event_id => streamseal_test.uid(p.i))
    from planned p order by p.i));
select streamseal.stamp();
select streamseal.ingest(array(
    select streamseal_test.copy('flags-origin', p.i, p.i, 'cp' || (p.i % 2), p.i, p.event_type, flags => p.flags,
                                event_id => streamseal_test.uid(100 + p.i))
    from planned p order by p.i));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'flags-origin';

-- The explicit fold of only the counted (flags & 3 = 0) events, per lane, epoch (width 10) and type.
create temp table truth on commit drop as
select l.origin, (p.i / 10)::bigint as epoch, 't1'::text as tenant, p.event_type,
       bit_xor(hashtextextended(streamseal_test.uid(p.i + l.id_offset)::text, 0)) as x0,
       bit_xor(hashtextextended(streamseal_test.uid(p.i + l.id_offset)::text, 1)) as x1, count(*) as n
from planned p
cross join (values ('epoch-flags'::text, 0), ('flags-origin', 100)) l(origin, id_offset)
where p.flags & 3 = 0
group by 1, 2, 3, 4;

select is((select count(*)::int from planned where flags & 3 = 0), 10,
    'the plan holds 10 counted and 15 flagged events per lane');

select results_eq(
    $$ select origin, epoch from streamseal.close_epochs(width => 10, settle => interval '1 hour') order by origin, epoch $$,
    $$ values ('epoch-flags'::text, 0::bigint), ('epoch-flags', 1), ('flags-origin', 0), ('flags-origin', 1) $$,
    'epochs 0 and 1 close on both lanes');

select bag_eq(
    $$ select origin, epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs $$,
    $$ select * from truth where epoch < 2 $$,
    'digest_epochs fold only the unflagged and state-only events of both lanes');
select is_empty(
    $$ select * from streamseal.digest_epochs where event_type = 'only.flagged'
       union all select origin, 0, tenant, event_type, x0, x1, n from streamseal.sealed_prefix where event_type = 'only.flagged' $$,
    'a type with only flagged events has no sealed row at all');
select bag_eq(
    $$ select origin, tenant, event_type, x0, x1, n from streamseal.sealed_prefix $$,
    $$ select origin, tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n
       from truth where epoch < 2 group by 1, 2, 3 $$,
    'sealed_prefix folds only the counted events below 20');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('epoch-flags', 0, 1000) $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n
       from truth where origin = 'epoch-flags' group by 1, 2 $$,
    'type_digests over the whole own lane counts only the counted events');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('flags-origin', 0, 1000, interval '1 hour') $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n
       from truth where origin = 'flags-origin' group by 1, 2 $$,
    'type_digests over the whole received lane counts only the counted copies');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.type_digests('epoch-flags', 11, 24) $$,
    $$ select tenant, event_type, bit_xor(x0) as x0, bit_xor(x1) as x1, sum(n)::bigint as n
       from (select 't1'::text as tenant, p.event_type, hashtextextended(streamseal_test.uid(p.i)::text, 0) as x0,
                    hashtextextended(streamseal_test.uid(p.i)::text, 1) as x1, 1 as n
             from planned p where p.i >= 11 and p.i < 24 and p.flags & 3 = 0) c
       group by 1, 2 $$,
    'a partial live window [11, 24) counts only the counted events too');

select * from finish();
rollback;
