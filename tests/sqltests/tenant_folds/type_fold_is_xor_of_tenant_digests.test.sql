-- Invariant 8: a healthy audit exchanges one digest per type whatever the tenant count, because a
-- type's fold over its tenants is the XOR of its (tenant, type) digests (and the sum of counts),
-- over exactly the scope the request names and the requester is granted; the consumer folds the
-- same scope of its copy, so equal stores compare equal and one lost event names its type.
begin;
select plan(7);
select streamseal.set_service_name('fold-origin');

-- 60 events: tenants t00..t09 (i % 10), types a.happened (i odd) and b.happened (i even).
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 10), i, event_type => case when i % 2 = 1 then 'a.happened' else 'b.happened' end,
                               tenant => 't0' || (i % 10), event_id => streamseal_test.uid(5000 + i))
    from generate_series(1, 60) i order by i));
select streamseal.stamp();
select streamseal.grant_redelivery_all_tenants('fold-consumer', array['a.happened', 'b.happened']);

select results_eq(
    $$ select event_type, x0, x1, n from streamseal.answer_type_folds('fold-consumer', 'fold-origin', 0, 100,
                                                                       array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    $$ select event_type, bit_xor(x0), bit_xor(x1), sum(n)::bigint from streamseal.type_digests('fold-origin', 0, 100)
       group by event_type order by event_type $$,
    'the type fold is the XOR of its tenant digests, one row per type');
select results_eq(
    $$ select event_type, n from streamseal.answer_type_folds('fold-consumer', 'fold-origin', 0, 100,
                                                               array['a.happened', 'a.happened'], array['t01', 't03']) $$,
    $$ values ('a.happened'::text, 12::bigint) $$,
    'a named-tenant scope folds only the tenants it names (and only the types it names)');
select streamseal.revoke_redelivery_all_tenants('fold-consumer', array['a.happened', 'b.happened']);
select streamseal.grant_redelivery('fold-consumer', array['a.happened'], array['t01']);
select results_eq(
    $$ select event_type, n from streamseal.answer_type_folds('fold-consumer', 'fold-origin', 0, 100,
                                                               array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    $$ values ('a.happened'::text, 6::bigint) $$,
    'the origin folds the scope intersected with what the requester is granted (invariant 11)');
select results_eq(
    $$ select event_type, n, watermark from streamseal.answer_type_folds('nobody', 'fold-origin', 0, 100,
                                                                          array['a.happened'], array[null]::text[]) $$,
    $$ values (null::text, 0::bigint, 61::bigint) $$,
    'nothing granted in scope answers the watermark alone');

-- The consumer side (this store holding copies of another origin's lane, fold-remote): the same
-- events as copies, but one lost in tenant t07 (type a.happened).
select streamseal.subscribe_all_tenants(array['a.happened', 'b.happened'], 'fold-remote');
select streamseal.ingest(array(
    select streamseal_test.copy('fold-remote', i, i, 's' || (i % 10), i,
                                event_type => case when i % 2 = 1 then 'a.happened' else 'b.happened' end,
                                tenant => 't0' || (i % 10), event_id => streamseal_test.uid(7000 + i))
    from generate_series(1, 60) i where i <> 17 order by i));
select results_eq(
    $$ select event_type, local_n, origin_n, reason
       from streamseal.compare_type_folds('fold-remote', 0, 61,
            array['b.happened'], array[22]::bigint[], array[44]::bigint[], array[30]::bigint[],
            array['b.happened'], array[null]::text[]) $$,
    $$ values ('b.happened'::text, 30::bigint, 30::bigint, 'identity_mismatch'::text) $$,
    'only the scope is compared: the loss in a.happened, outside it, is not this comparison''s');
select throws_ok(
    $$ select * from streamseal.compare_type_folds('fold-remote', 0, 61, array['c.happened'], array[1]::bigint[],
                                                   array[1]::bigint[], array[1]::bigint[], array['b.happened'], array[null]::text[]) $$,
    '22023', 'compare_type_folds: row #1 of the answer of origin "fold-remote": event_type ''c.happened'' lies outside the scope the request named',
    'an answer row outside the named scope refuses the answer whole');
-- The origin's true folds, computed from the same events, compared with the copy missing #17.
select results_eq(
    $$ with truth as (
           select case when i % 2 = 1 then 'a.happened' else 'b.happened' end as event_type,
                  bit_xor(streamseal._h0(streamseal_test.uid(7000 + i))) as x0, bit_xor(streamseal._h1(streamseal_test.uid(7000 + i))) as x1,
                  count(*) as n
           from generate_series(1, 60) i group by 1 order by 1)
       select event_type, local_n, origin_n, reason
       from streamseal.compare_type_folds('fold-remote', 0, 61,
            (select array_agg(event_type) from truth), (select array_agg(x0) from truth), (select array_agg(x1) from truth),
            (select array_agg(n) from truth), array['a.happened', 'b.happened'], array[null, null]::text[]) $$,
    $$ values ('a.happened'::text, 29::bigint, 30::bigint, 'deficit'::text) $$,
    'one lost event among ten tenants names its type, and only its type');

select * from finish();
rollback;
