-- Invariant 13: a backfill of nothing, or of a type this service does not consume, is refused
-- with a message naming what is wrong.
begin;
select plan(2);
select streamseal.set_service_name('bf-bad');
select streamseal.subscribe_all_tenants(array['bf.placed']);
select streamseal.consumed_types_reconcile(true);
select throws_ok($$ select streamseal.backfill_requested('{}', 'c0000000-0000-0000-0000-000000000001') $$,
    '22023', 'backfill_requested: a backfill must name its event types: expected a non-empty list, got {}',
    'an empty type list is refused');
select throws_ok($$ select streamseal.backfill_requested(array['bf.unknown'], 'c0000000-0000-0000-0000-000000000001') $$,
    '22023', 'backfill: event type ''bf.unknown'' is not consumed by this service: subscribe to it first (a backfill fills what a service consumes)',
    'a type not consumed is refused by name');
select * from finish();
rollback;
