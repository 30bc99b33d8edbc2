-- Invariant 1 without false alarms: history a consumer did not consume is backfill's business,
-- not a gap. Unsubscribing forgets the type's lanes, so subscribing again starts a lane at the
-- first window it then sees; before, the old lane's floor named everything emitted while
-- unsubscribed as holes (confirmed gaps, degraded readiness and capped repair requests for
-- history the service had chosen not to consume). A lane still covered by another subscription
-- (to the same origin by name) stays.
begin;
select plan(4);
select streamseal.set_service_name('resub-consumer');
select streamseal.subscribe_all_tenants(array['a.x', 'b.x']);
select streamseal.subscribe_all_tenants(array['b.x'], 'resub-origin');

-- Both lanes born at type_seq 1..3, all held.
select count(*) from (select streamseal.ingest(array(
    select streamseal_test.copy('resub-origin', i, (i + 1) / 2, 's' || i, 1, case when i % 2 = 1 then 'a.x' else 'b.x' end)
    from generate_series(1, 6) i))) x;
select count(*) from (values ('a.x'), ('b.x')) v(t)
cross join lateral streamseal.verify_checkpoint('resub-origin', 1, 7, v.t, array['t1'], array[3::bigint],
    array[1::bigint], array[3::bigint], array['{}'::int8multirange]);
select results_eq($$ select event_type, floor from streamseal.lanes where origin = 'resub-origin' order by 1 $$,
    $$ values ('a.x'::text, 3::bigint), ('b.x', 3::bigint) $$, 'fixture: both lanes at floor 3');

select streamseal.unsubscribe_all_tenants(array['a.x', 'b.x']);
select results_eq($$ select event_type from streamseal.lanes where origin = 'resub-origin' order by 1 $$,
    $$ values ('b.x'::text) $$,
    'unsubscribing forgets a.x''s lane; b.x stays consumed from resub-origin by name, and keeps its lane');

-- Subscribed again; meanwhile the origin emitted a.x type_seqs 4..10 and this service took none.
-- The first window it sees now is 11..12, held.
select streamseal.subscribe_all_tenants(array['a.x']);
select count(*) from (select streamseal.ingest(array(
    select streamseal_test.copy('resub-origin', 100 + i, i, 'n' || i, 1, 'a.x') from generate_series(11, 12) i))) x;
create temp table verified on commit drop as
select * from streamseal.verify_checkpoint('resub-origin', 100, 113, 'a.x', array['t1'], array[2::bigint],
    array[11::bigint], array[12::bigint], array['{}'::int8multirange]);
select results_eq($$ select floor, suspected from verified $$, $$ values (12::bigint, '{}'::int8multirange) $$,
    'the new lane is born at the window it sees: 4..10 are history, not holes');
select results_eq($$ select birth_floor from streamseal.lanes where origin = 'resub-origin' and event_type = 'a.x' $$,
    $$ values (10::bigint) $$, 'its birth floor marks where backfill would start');

select * from finish();
rollback;
