-- Invariant 11: a redelivery selection made for a requester returns only the (tenant, type) pairs
-- it is granted, whichever read path serves the page (type_seq ranges, a narrow window, named
-- streams, the wide walk); a request naming no tenant means the requester's granted tenants,
-- never every tenant; and what cannot be served is told only for granted pairs.
begin;
select plan(9);
select streamseal.set_service_name('redeliver-grants');

-- 40 events: tenant acme when i is odd, globex when even; types a (i <= 20) and b; streams s(i % 4).
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 4), i::bigint, case when i <= 20 then 'a' else 'b' end,
                               case when i % 2 = 1 then 'acme' else 'globex' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 40) as i order by i));
select streamseal.stamp();
select streamseal.grant_redelivery('billing', array['a', 'b'], array['acme']);
select streamseal.grant_redelivery('billing', array['b'], array['globex']);

select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['acme', 'globex'], array['a', 'b'], requester => 'billing') $$,
    $$ select event_id from streamseal.numbered_events where tenant = 'acme' or (tenant = 'globex' and event_type = 'b')
       order by stream_id, stream_version $$,
    'the wide walk returns only granted pairs (globex''s a is left out)');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['globex'], array['a'], from_seq => 1, to_seq => 20, requester => 'billing') $$,
    $$ select null::uuid where false $$,
    'a narrow window of an ungranted pair returns nothing');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['acme', 'globex'], array['a'], type_seq_ranges => '{[1,4)}', requester => 'billing') $$,
    $$ select event_id from streamseal.numbered_events where tenant = 'acme' and event_type = 'a' and type_seq < 4
       order by stream_id, stream_version $$,
    'the type_seq path returns only granted pairs');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['acme', 'globex'], array['a'], streams => array['s0', 's1'], requester => 'billing') $$,
    $$ select event_id from streamseal.numbered_events where tenant = 'acme' and event_type = 'a' and stream_id in ('s0', 's1')
       order by stream_id, stream_version $$,
    'the named-streams path returns only granted pairs');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(null, array['a', 'b'], requester => 'billing') $$,
    $$ select event_id from streamseal.numbered_events where tenant = 'acme' or (tenant = 'globex' and event_type = 'b')
       order by stream_id, stream_version $$,
    'no tenant named: the requester''s granted pairs, not every tenant');
select is_empty(
    $$ select * from streamseal.select_redelivery(null, array['a', 'b'], requester => 'shipping') $$,
    'no tenant named by a requester granted nothing: nothing');
select throws_ok(
    $$ select * from streamseal.select_redelivery(null, array['a']) $$,
    '22023', 'select_redelivery: a redelivery request must name its tenants: expected a non-empty list, got null',
    'without a requester the tenants must still be named');
select results_eq(
    $$ select tenant, event_type, reason from streamseal.redelivery_unservable(array['acme', 'globex'], array['a'],
           type_seq_ranges => '{[1,100)}', requester => 'billing') $$,
    $$ values ('acme'::text, 'a'::text, 'never_existed'::text) $$,
    'unservable sequences are told only for granted pairs');
select results_eq(
    $$ select tenant, event_type, reason from streamseal.redelivery_unservable(array['acme', 'globex'], array['a'],
           type_seq_ranges => '{[1,100)}') $$,
    $$ values ('acme'::text, 'a'::text, 'never_existed'::text), ('globex'::text, 'a'::text, 'never_existed'::text) $$,
    'fixture: without a requester both pairs are told');

select * from finish();
rollback;
