-- Invariants 1 and 11: a consumer verifies and receives the types it subscribes to, from any
-- origin ('*') or from one named origin. subscribed() answers for both, subscribing is
-- idempotent, unsubscribing removes exactly the named key, and bad input is refused.
begin;
select plan(18);
select streamseal.set_service_name('sub-consumer');

select is(streamseal.subscribe_all_tenants(array['order.placed', 'order.paid']), 2, 'subscribing to two types from any origin adds two');
select is(streamseal.subscribe_all_tenants(array['order.paid']), 0, 'subscribing again adds nothing');
select is(streamseal.subscribe_all_tenants(array['invoice.sent', 'invoice.sent'], 'billing'), 1, 'a named origin subscription adds one per distinct type');
select is(streamseal.subscribe_all_tenants(array['invoice.sent'], 'billing'), 0, 'and is idempotent too');
select bag_eq(
    $$ select origin, event_type from streamseal.subscriptions $$,
    $$ values ('*', 'order.placed'), ('*', 'order.paid'), ('billing', 'invoice.sent') $$,
    'no origin is stored as ''*''; a named origin under its name');

select ok(streamseal.subscribed('shipping', 'acme', 'order.placed'), 'an any-origin type is subscribed from every origin');
select ok(streamseal.subscribed('billing', 'acme', 'invoice.sent'), 'a named-origin type is subscribed from that origin');
select ok(not streamseal.subscribed('shipping', 'acme', 'invoice.sent'), 'a named-origin type is not subscribed from another origin');
select ok(not streamseal.subscribed('billing', 'acme', 'refund.issued'), 'an unsubscribed type is not subscribed');
select is(streamseal.subscribed(null, 'acme', 'order.placed'), false, 'a null origin answers false, not the any-origin row');

select is(streamseal.unsubscribe_all_tenants(array['invoice.sent', 'order.placed']), 1,
    'unsubscribing without an origin removes only any-origin rows');
select ok(not streamseal.subscribed('shipping', 'acme', 'order.placed'), 'the unsubscribed type is no longer subscribed');
select ok(streamseal.subscribed('billing', 'acme', 'invoice.sent'), 'the named-origin subscription stays');
select is(streamseal.unsubscribe_all_tenants(array['invoice.sent'], 'billing'), 1, 'unsubscribing by name removes it');
select ok(not streamseal.subscribed('billing', 'acme', 'invoice.sent'), 'and it is no longer subscribed');

select throws_ok(
    $$ select streamseal.subscribe_all_tenants(array['order.placed'], 'Billing Service') $$,
    '22023', 'subscribe_all_tenants: origin ''Billing Service'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}, or null for any origin',
    'an origin that is not a service name is refused');
select throws_ok(
    $$ select streamseal.subscribe_all_tenants(array['order.placed'], 'sub-consumer') $$,
    '22023', 'subscribe_all_tenants: origin "sub-consumer" is this service: a service does not subscribe to its own events',
    'subscribing to this service''s own events is refused');
select throws_ok(
    $$ select streamseal.subscribe_all_tenants('{}') $$,
    '22023', 'subscribe_all_tenants: a subscription must name its event types: expected a non-empty list, got {}',
    'a subscription of no types is refused');

select * from finish();
rollback;
