-- Invariant 11: an origin serves a service redelivery only of the event types granted to it.
-- Granting is idempotent, ungranted_types names exactly what a request asks for beyond its
-- grants, revoking takes a type back, and a bad service name or an unnamed type list is refused.
begin;
select plan(16);
select streamseal.set_service_name('grants-origin');

select is(streamseal.grant_redelivery('billing', array['order.placed', 'order.paid', 'order.placed']), 2,
    'a grant adds one row per distinct type');
select is(streamseal.grant_redelivery('billing', array['order.paid', 'order.shipped']), 1,
    're-granting adds only the new type');
select is(streamseal.grant_redelivery('billing', array['order.paid', 'order.shipped']), 0,
    'granting again adds nothing');
select bag_eq(
    $$ select service, event_type from streamseal.grants $$,
    $$ values ('billing', 'order.placed'), ('billing', 'order.paid'), ('billing', 'order.shipped') $$,
    'the grants hold each (service, type) once');

select is(streamseal.ungranted_types('billing', array['order.shipped', 'refund.issued', 'order.placed', 'audit.logged', 'refund.issued']),
    array['audit.logged', 'refund.issued'],
    'ungranted_types lists exactly the requested types not granted, each once, in name order');
select is(streamseal.ungranted_types('billing', array['order.placed', 'order.paid']), '{}'::text[],
    'a request wholly within the grants has nothing ungranted');
select is(streamseal.ungranted_types('shipping', array['order.placed', 'order.paid']), array['order.paid', 'order.placed'],
    'grants belong to one service: another service is granted nothing');

select is(streamseal.revoke_redelivery('billing', array['order.paid', 'never.granted']), 1,
    'revoking removes only what was granted');
select is(streamseal.ungranted_types('billing', array['order.placed', 'order.paid']), array['order.paid'],
    'a revoked type is ungranted again');
select is(streamseal.revoke_redelivery('billing', array['order.paid']), 0,
    'revoking again removes nothing');

select throws_ok(
    $$ select streamseal.grant_redelivery('Billing', array['order.placed']) $$,
    '22023', 'grant_redelivery: service ''Billing'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'a service name with capitals is refused');
select throws_ok(
    $$ select streamseal.grant_redelivery('billing', '{}') $$,
    '22023', 'grant_redelivery: a grant must name its event types: expected a non-empty list, got {}',
    'a grant of no types is refused');
select throws_ok(
    $$ select streamseal.revoke_redelivery(null, array['order.placed']) $$,
    '22023', 'revoke_redelivery: service null is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'a revocation without a service is refused');
select throws_ok(
    $$ select streamseal.ungranted_types('billing', null) $$,
    '22023', 'ungranted_types: a redelivery request must name its event types: expected a non-empty list, got null',
    'a request that names no types is refused, never read as everything');
select throws_ok(
    $$ select streamseal.ungranted_types('billing', array['order.placed', null]) $$,
    '22023', 'ungranted_types: a redelivery request must name its event types: expected no null element, got {order.placed,NULL}',
    'a request with a null type is refused');
select bag_eq(
    $$ select service, event_type from streamseal.grants $$,
    $$ values ('billing', 'order.placed'), ('billing', 'order.shipped') $$,
    'refused calls changed no grant');

select * from finish();
rollback;
