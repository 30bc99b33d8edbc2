-- version: which code package this database runs, for applications to check before relying on
-- the surface privileges.sql grants, and for operators to compare with the binary that migrated it.
--
-- Scheme: MAJOR.MINOR.PATCH (semantic versioning) of the code package, judged by what an
-- application can see: the functions granted to streamseal_application and the columns of the
-- tables it may read. MAJOR moves when one of those changes incompatibly or goes away, MINOR when
-- the surface grows (a new granted function, overload or readable column), PATCH for every other
-- release that changes this package (bodies, private helpers, control-plane functions). While
-- MAJOR is 0 the surface is still settling, and a MINOR move may also break it. The schema's own
-- position is tern's (streamseal.schema_version), not this.

-- version returns the code package's version string.
create function streamseal.version()
returns text
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select '0.5.0'::pg_catalog.text $$;
