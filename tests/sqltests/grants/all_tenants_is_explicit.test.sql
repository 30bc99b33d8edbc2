-- Invariant 11: "every tenant" is granted only by saying so (grant_redelivery_all_tenants), never
-- by omission; the old type-only grant_redelivery(service, types) refuses with what to call
-- instead; an all-tenant grant covers tenants not yet seen, and its revocation leaves one-tenant
-- grants in place.
begin;
select plan(9);
select streamseal.set_service_name('grants-all-origin');

select throws_ok(
    $$ select streamseal.grant_redelivery('audit-svc', array['order.placed']) $$,
    '42883', 'grant_redelivery(service, event_types) was removed: name the tenants with grant_redelivery(service, event_types, tenants), or grant every tenant explicitly with grant_redelivery_all_tenants(service, event_types)',
    'the type-only grant is refused with what to call instead');
select throws_ok(
    $$ select streamseal.revoke_redelivery('audit-svc', array['order.placed']) $$,
    '42883', 'revoke_redelivery(service, event_types) was removed: name the tenants with revoke_redelivery(service, event_types, tenants), or withdraw an every-tenant grant with revoke_redelivery_all_tenants(service, event_types)',
    'the type-only revocation is refused with what to call instead');
select is((select count(*)::int from streamseal.grants), 0, 'the refused calls granted nothing');

select is(streamseal.grant_redelivery_all_tenants('audit-svc', array['order.placed', 'order.placed']), 1,
    'an all-tenant grant adds one row per type');
select is(streamseal.grant_redelivery_all_tenants('audit-svc', array['order.placed']), 0, 'and is idempotent');
select is_empty(
    $$ select * from streamseal.ungranted_types('audit-svc', array['order.placed'], array['acme', 'never-seen', '', '*']) $$,
    'an all-tenant grant covers every tenant, present or future, '''' and ''*'' included');
select is(streamseal.grant_redelivery('audit-svc', array['order.placed'], array['acme']), 1,
    'a one-tenant grant beside it is recorded');
select is(streamseal.revoke_redelivery_all_tenants('audit-svc', array['order.placed']), 1, 'the all-tenant grant is revoked');
select results_eq(
    $$ select tenant, event_type from streamseal.ungranted_types('audit-svc', array['order.placed'], array['acme', 'globex']) $$,
    $$ values ('globex', 'order.placed') $$,
    'the one-tenant grant stays; every other tenant is ungranted again');

select * from finish();
rollback;
