-- Tenant-key indexes for the audit's range folds (issue 21 item 1, invariant 8).
--
-- Why: a mismatched type was drilled into by tenant pages listing every tenant's digest, O(tenants)
-- on the wire and in the origin's database. The drill-down now bisects the tenant key space: it
-- asks for the folds of K sub-ranges of a range [lo, hi) of tenant keys and recurses only into
-- those that differ (sql/functions/range_folds.sql). A tenant's key is the 62-bit hash below,
-- spelled here exactly as streamseal.tenant_key() spells it (an index never references a
-- function the code package replaces), so a range fold reads the sealed rows of its range by
-- index instead of every pair of the lane.
create index sealed_prefix_by_tenant_key
    on streamseal.sealed_prefix (origin, (pg_catalog.hashtextextended(tenant, 0) & 4611686018427387903));

create index digest_epochs_by_tenant_key
    on streamseal.digest_epochs (origin, (pg_catalog.hashtextextended(tenant, 0) & 4611686018427387903), epoch);

---- create above / drop below ----

drop index streamseal.digest_epochs_by_tenant_key;
drop index streamseal.sealed_prefix_by_tenant_key;
