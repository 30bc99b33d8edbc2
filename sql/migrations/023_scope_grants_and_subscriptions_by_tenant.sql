-- Grants and subscriptions gain a tenant scope (invariant 11): a service may be granted, and a
-- consumer may subscribe to, some tenants of an event type, or every tenant. "Every tenant" is
-- an explicit flag, never a tenant value: a tenant may be any string ('' for single-tenant
-- services, even '*'), so no value can stand for "all" without shadowing a real tenant. A row is
-- either one tenant (tenant set, all_tenants false) or every tenant (tenant null, all_tenants
-- true), never both, and each kind is unique per key through its own partial index.
--
-- Rows that exist before this migration were type-only, which meant every tenant: they become
-- explicit all-tenant rows, so a deployed origin serves and a deployed consumer consumes exactly
-- what it did before.

alter table streamseal.grants
    add column tenant text,
    add column all_tenants boolean not null default true;
alter table streamseal.grants alter column all_tenants drop default;
alter table streamseal.grants drop constraint grants_pkey;
alter table streamseal.grants
    add constraint grants_names_one_tenant_or_all_tenants check ((tenant is null) = all_tenants);
create unique index grants_all_tenants_key on streamseal.grants (service, event_type) where all_tenants;
create unique index grants_tenant_key on streamseal.grants (service, event_type, tenant) where not all_tenants;

alter table streamseal.subscriptions
    add column tenant text,
    add column all_tenants boolean not null default true;
alter table streamseal.subscriptions alter column all_tenants drop default;
alter table streamseal.subscriptions drop constraint subscriptions_pkey;
alter table streamseal.subscriptions
    add constraint subscriptions_names_one_tenant_or_all_tenants check ((tenant is null) = all_tenants);
create unique index subscriptions_all_tenants_key on streamseal.subscriptions (origin, event_type) where all_tenants;
create unique index subscriptions_tenant_key on streamseal.subscriptions (origin, event_type, tenant) where not all_tenants;

---- create above / drop below ----

-- Going back to type-only rows: a one-tenant row cannot be expressed and is dropped (the
-- narrower scope is lost, never widened into every tenant).
delete from streamseal.subscriptions where not all_tenants;
drop index streamseal.subscriptions_tenant_key;
drop index streamseal.subscriptions_all_tenants_key;
alter table streamseal.subscriptions drop constraint subscriptions_names_one_tenant_or_all_tenants;
alter table streamseal.subscriptions drop column all_tenants, drop column tenant;
alter table streamseal.subscriptions add primary key (origin, event_type);

delete from streamseal.grants where not all_tenants;
drop index streamseal.grants_tenant_key;
drop index streamseal.grants_all_tenants_key;
alter table streamseal.grants drop constraint grants_names_one_tenant_or_all_tenants;
alter table streamseal.grants drop column all_tenants, drop column tenant;
alter table streamseal.grants add primary key (service, event_type);
