-- Invariant 11 (and 8: repair traffic is what was asked for): select_redelivery's filters are
-- conjunctive. Tenants, event types, streams, the origin_seq window and type_seq ranges each
-- narrow the selection alone, and together they intersect: dropping any one of them widens the
-- combined selection by exactly the rows only that filter excluded.
begin;
select plan(13);
select streamseal.set_service_name('redeliver-filters');

-- Event i: stream s(i % 3), version i, tenant t2 when i is odd, type a/b alternating in pairs;
-- 25 and 26 are another tenant's other type. One batch, one stamp: origin_seq = i, and type_seq
-- counts per (tenant, type) in i order (planned.type_seq).
create temp table planned on commit drop as
select i, 's' || (i % 3) as stream_id, i::bigint as version,
       case when i > 24 then 't3' else 't' || (1 + i % 2) end as tenant,
       case when i > 24 then 'c' when (i / 2) % 2 = 0 then 'a' else 'b' end as event_type
from generate_series(1, 26) as i;
alter table planned add column type_seq bigint;
update planned p set type_seq = n.type_seq
from (select i, row_number() over (partition by tenant, event_type order by i) as type_seq from planned) n
where n.i = p.i;
select streamseal.append(array(
    select streamseal_test.own(p.stream_id, p.version, p.event_type, p.tenant, event_id => streamseal_test.uid(p.i))
    from planned p order by p.i));
select streamseal.stamp();

select is_empty(
    $$ select e.event_id from streamseal.numbered_events e join planned p on streamseal_test.uid(p.i) = e.event_id
       where e.origin_seq <> p.i or e.type_seq <> p.type_seq $$,
    'fixture: origin_seq is i and type_seq counts per (tenant, type)');

-- Each filter alone, against the plain predicate over the store.
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['a', 'b']) $$,
    $$ select event_id from streamseal.numbered_events where tenant = 't1' and event_type in ('a', 'b')
       order by stream_id, stream_version $$,
    'the tenants filter alone keeps the named tenants (12 of 24)');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1', 't2'], array['a']) $$,
    $$ select event_id from streamseal.numbered_events where tenant in ('t1', 't2') and event_type = 'a'
       order by stream_id, stream_version $$,
    'the event types filter alone keeps the named types');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1', 't2'], array['a', 'b'], streams => array['s0', 's2']) $$,
    $$ select event_id from streamseal.numbered_events where tenant in ('t1', 't2') and event_type in ('a', 'b')
       and stream_id in ('s0', 's2') order by stream_id, stream_version $$,
    'the streams filter alone keeps the named streams');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1', 't2'], array['a', 'b'], from_seq => 5, to_seq => 15) $$,
    $$ select event_id from streamseal.numbered_events where tenant in ('t1', 't2') and event_type in ('a', 'b')
       and origin_seq >= 5 and origin_seq < 15 order by stream_id, stream_version $$,
    'the origin_seq window alone keeps [5, 15), half-open');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1', 't2'], array['a', 'b'],
                                                           type_seq_ranges => '{[2,4), [6,7)}') $$,
    $$ select event_id from streamseal.numbered_events where tenant in ('t1', 't2') and event_type in ('a', 'b')
       and type_seq in (2, 3, 6) order by stream_id, stream_version $$,
    'the type_seq ranges alone keep type_seqs 2, 3 and 6');

-- All five together: t2 x b x {s0, s2} x [3, 22) x type_seqs {1, 2, 4, 5, 6}. Of t2's b events
-- (3, 7, 11, 15, 19, 23) the streams drop 7 and 19, the ranges drop 11 (type_seq 3), the window
-- drops 23: each filter excludes a row no other filter does.
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t2'], array['b'], array['s0', 's2'], 3, 22, '{[1,3), [4,7)}') $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 15]) with ordinality as u(n, o) order by o $$,
    'the five filters together select their intersection: events 3 and 15');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t2'], array['b'], array['s0', 's2'], null, null, '{[1,3), [4,7)}') $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 15, 23]) with ordinality as u(n, o) order by o $$,
    'without the window, event 23 joins');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t2'], array['b'], array['s0', 's2'], 3, 22) $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 15, 11]) with ordinality as u(n, o) order by o $$,
    'without the type_seq ranges, event 11 (type_seq 3) joins');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t2'], array['b'], null, 3, 22, '{[1,3), [4,7)}') $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 15, 7, 19]) with ordinality as u(n, o) order by o $$,
    'without the streams filter, stream s1''s events 7 and 19 join, in stream order');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1', 't2'], array['b'], array['s0', 's2'], 3, 22, '{[1,3), [4,7)}') $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 6, 15, 18, 14]) with ordinality as u(n, o) order by o $$,
    'with tenant t1 too, its b events 6, 18 and 14 join');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t2'], array['a', 'b'], array['s0', 's2'], 3, 22, '{[1,3), [4,7)}') $$,
    $$ select streamseal_test.uid(n) from unnest(array[3, 15, 21, 5, 17]) with ordinality as u(n, o) order by o $$,
    'with type a too, t2''s a events 21, 5 and 17 join (9, type_seq 3, stays out)');
select is_empty(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['c']) $$,
    'a tenant that never emitted a type selects nothing of it');

select * from finish();
rollback;
