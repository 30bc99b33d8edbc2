-- Tenant-key indexes for the audit's range folds, and where a capped drill resumes (issue 21
-- item 1, invariants 8 and 14).
--
-- Why: a mismatched type was drilled into by tenant pages listing every tenant's digest, O(tenants)
-- on the wire and in the origin's database. The drill-down now bisects the tenant key space: it
-- asks for the folds of K sub-ranges of a range [lo, hi) of tenant keys and recurses only into
-- those that differ (sql/functions/range_folds.sql). A tenant's key is the 62-bit hash below,
-- spelled here exactly as streamseal.tenant_key() spells it (an index never references a
-- function the code package replaces), so a range fold reads the sealed rows of its types and
-- range by index instead of every pair of the lane.
-- By type first: a drill-down step folds only the mismatched types, so the first step of a drill
-- into one type of five reads that type's pairs, not the lane's.
create index sealed_prefix_by_tenant_key
    on streamseal.sealed_prefix (origin, event_type, (pg_catalog.hashtextextended(tenant, 0) & 4611686018427387903));

create index digest_epochs_by_tenant_key
    on streamseal.digest_epochs (origin, event_type, (pg_catalog.hashtextextended(tenant, 0) & 4611686018427387903), epoch);

-- audit_range_cursors: on a consumer, per origin, the tenant key at which the next audit's drill
-- into tenant ranges starts. A drill stops at its per-audit request budget; started again at key
-- 0 after a restart, it would compare the same first ranges forever while damage no repair heals
-- (a local extra, an identity mismatch) sits there, and never reach the damage beyond them
-- (invariant 14; the lesson of audit_cursors, migration 015). 0: the last drill finished.
create table streamseal.audit_range_cursors (
    origin text primary key
        constraint audit_range_cursors_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    resume_key bigint not null
        constraint audit_range_cursors_resume_key_in_key_space check (resume_key >= 0 and resume_key < 4611686018427387904),
    updated_at timestamptz not null default now()
);

---- create above / drop below ----

drop table streamseal.audit_range_cursors;
drop index streamseal.digest_epochs_by_tenant_key;
drop index streamseal.sealed_prefix_by_tenant_key;
