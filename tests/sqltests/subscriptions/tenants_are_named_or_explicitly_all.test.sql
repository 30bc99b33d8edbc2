-- Invariants 1 and 11: a consumer subscribes to named tenants of a type, or to every tenant only
-- by saying so (subscribe_all_tenants); subscribed() answers per tenant, '' and '*' are tenants
-- like any other, the tenant-less subscribe refuses with what to call instead, and unsubscribing
-- a tenant forgets only that tenant's lane.
begin;
select plan(13);
select streamseal.set_service_name('sub-tenant-consumer');

select throws_ok(
    $$ select streamseal.subscribe(array['order.placed'], 'sub-tenant-origin') $$,
    '42883', 'subscribe(event_types, origin) was removed: name the tenants with subscribe(event_types, origin, tenants), or subscribe to every tenant explicitly with subscribe_all_tenants(event_types, origin)',
    'a subscription without tenants is refused with what to call instead');
select throws_ok(
    $$ select streamseal.subscribe(array['order.placed'], 'sub-tenant-origin', null) $$,
    '22023', 'subscribe: a subscription must name its tenants (every tenant: the _all_tenants form): expected a non-empty list, got null',
    'null tenants are refused, never read as every tenant');
select is((select count(*)::int from streamseal.subscriptions), 0, 'the refused calls subscribed nothing');

select is(streamseal.subscribe(array['order.placed'], 'sub-tenant-origin', array['acme', 'acme', '']), 2,
    'subscribing to two distinct tenants adds two');
select is(streamseal.subscribe(array['order.placed'], 'sub-tenant-origin', array['acme']), 0, 'and is idempotent');
select ok(streamseal.subscribed('sub-tenant-origin', 'acme', 'order.placed'), 'a named tenant is subscribed');
select ok(streamseal.subscribed('sub-tenant-origin', '', 'order.placed'), 'the single-tenant tenant '''' is a tenant');
select ok(not streamseal.subscribed('sub-tenant-origin', 'globex', 'order.placed'), 'another tenant is not subscribed');
select ok(not streamseal.subscribed('sub-tenant-origin', '*', 'order.placed'), '''*'' is a tenant, not a wildcard');

-- Lanes of both tenants exist; unsubscribing acme forgets acme's lane only.
insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq)
values ('sub-tenant-origin', 'acme', 'order.placed', 0, 0, 0), ('sub-tenant-origin', '', 'order.placed', 0, 0, 0);
select is(streamseal.unsubscribe(array['order.placed'], 'sub-tenant-origin', array['acme']), 1, 'unsubscribing a tenant removes it');
select results_eq(
    $$ select tenant from streamseal.lanes where origin = 'sub-tenant-origin' $$,
    $$ values ('') $$,
    'only the unsubscribed tenant''s lane is forgotten');

select is(streamseal.subscribe_all_tenants(array['order.placed'], 'sub-tenant-origin'), 1, 'an every-tenant subscription adds one');
select ok(streamseal.subscribed('sub-tenant-origin', 'globex', 'order.placed'), 'and covers every tenant');

select * from finish();
rollback;
