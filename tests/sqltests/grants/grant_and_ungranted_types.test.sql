-- Invariant 11: an origin serves a service redelivery only of the (tenant, event type) pairs
-- granted to it. Granting names its tenants and is idempotent, ungranted_types names exactly the
-- requested pairs beyond the grants, revoking takes a pair back, and a bad service name or an
-- unnamed type or tenant list is refused.
begin;
select plan(19);
select streamseal.set_service_name('grants-origin');

select is(streamseal.grant_redelivery('billing', array['order.placed', 'order.paid', 'order.placed'], array['acme']), 2,
    'granting two distinct types for one tenant adds two');
select is(streamseal.grant_redelivery('billing', array['order.paid', 'order.shipped'], array['acme', '']), 3,
    'granting overlapping pairs adds only the new ones ('''' is a tenant: the single-tenant one)');
select is(streamseal.grant_redelivery('billing', array['order.paid', 'order.shipped'], array['acme', '']), 0,
    'granting again adds nothing');
select bag_eq(
    $$ select service, event_type, tenant, all_tenants from streamseal.grants $$,
    $$ values ('billing', 'order.placed', 'acme', false), ('billing', 'order.paid', 'acme', false),
              ('billing', 'order.shipped', 'acme', false), ('billing', 'order.paid', '', false),
              ('billing', 'order.shipped', '', false) $$,
    'the grants table holds each granted pair once, none of them for every tenant');

select results_eq(
    $$ select tenant, event_type from streamseal.ungranted_types('billing', array['order.placed', 'refund.issued'], array['globex', 'acme']) $$,
    $$ values ('acme', 'refund.issued'), ('globex', 'order.placed'), ('globex', 'refund.issued') $$,
    'ungranted_types lists exactly the requested pairs not granted, once, in order: another tenant is not granted');
select is_empty(
    $$ select * from streamseal.ungranted_types('billing', array['order.placed', 'order.paid'], array['acme']) $$,
    'nothing is ungranted when every requested pair is granted');
select results_eq(
    $$ select tenant, event_type from streamseal.ungranted_types('billing', array['order.placed'], array['*']) $$,
    $$ values ('*', 'order.placed') $$,
    'the tenant ''*'' is a tenant like any other, not a wildcard');
select results_eq(
    $$ select tenant, event_type from streamseal.ungranted_types('shipping', array['order.paid'], array['acme']) $$,
    $$ values ('acme', 'order.paid') $$,
    'another service is granted nothing by default');

select is(streamseal.revoke_redelivery('billing', array['order.paid', 'never.granted'], array['acme']), 1,
    'revoking removes only what was granted');
select results_eq(
    $$ select tenant, event_type from streamseal.ungranted_types('billing', array['order.paid'], array['acme', '']) $$,
    $$ values ('acme', 'order.paid') $$,
    'the revoked pair is ungranted, the other tenant''s grant stays');
select is(streamseal.revoke_redelivery('billing', array['order.paid'], array['acme']), 0,
    'revoking again removes nothing');

-- Bad input.
select throws_ok(
    $$ select streamseal.grant_redelivery('Billing', array['order.placed'], array['acme']) $$,
    '22023', 'grant_redelivery: service ''Billing'' is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'a bad service name is refused');
select throws_ok(
    $$ select streamseal.grant_redelivery('billing', '{}', array['acme']) $$,
    '22023', 'grant_redelivery: a grant must name its event types: expected a non-empty list, got {}',
    'a grant naming no types is refused');
select throws_ok(
    $$ select streamseal.grant_redelivery('billing', array['order.placed'], null) $$,
    '22023', 'grant_redelivery: a grant must name its tenants (every tenant: the _all_tenants form): expected a non-empty list, got null',
    'a grant with null tenants is refused, never read as every tenant');
select throws_ok(
    $$ select streamseal.grant_redelivery('billing', array['order.placed'], '{}') $$,
    '22023', 'grant_redelivery: a grant must name its tenants (every tenant: the _all_tenants form): expected a non-empty list, got {}',
    'a grant with no tenants is refused, never read as every tenant');
select throws_ok(
    $$ select streamseal.revoke_redelivery(null, array['order.placed'], array['acme']) $$,
    '22023', 'revoke_redelivery: service null is invalid: expected a service name [a-z][a-z0-9-]{0,62}',
    'a revocation with a null service is refused');
select throws_ok(
    $$ select * from streamseal.ungranted_types('billing', array['order.placed'], null) $$,
    '22023', 'ungranted_types: a redelivery request must name its tenants (every tenant: the _all_tenants form): expected a non-empty list, got null',
    'a check with null tenants is refused');
select throws_ok(
    $$ select * from streamseal.ungranted_types('billing', array['order.placed', null], array['acme']) $$,
    '22023', 'ungranted_types: a redelivery request must name its event types: expected no null element, got {order.placed,NULL}',
    'a check with a null type is refused');
select bag_eq(
    $$ select service, event_type, tenant from streamseal.grants $$,
    $$ values ('billing', 'order.placed', 'acme'), ('billing', 'order.shipped', 'acme'),
              ('billing', 'order.paid', ''), ('billing', 'order.shipped', '') $$,
    'refused calls changed no grant');

select * from finish();
rollback;
