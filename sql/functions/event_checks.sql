-- The checks append() and ingest() share, so an own event and a copy are held to the same rules.
-- Deliberately LANGUAGE sql without a SET clause: Postgres inlines such functions into the
-- calling query (a SET clause forbids inlining), so every name inside is fully qualified instead.

-- _event_problem names what is wrong with one event's common fields, or returns null.
-- STABLE, not IMMUTABLE, because format() is stable: Postgres inlines a SQL function only when
-- its body is no more volatile than declared, and a non-inlined SQL function is re-planned on
-- every call (measured: ~10x the cost of the whole check).
-- The limits (streamseal.limits) come in as arguments, read once per batch by the caller: a
-- subquery here would stop the inlining. Ids and metadata are measured in bytes (what indexes and
-- the wire hold), metadata as its jsonb text.
create function streamseal._event_problem(
    tenant text, stream_id text, stream_version bigint, event_type text, flags integer, payload bytea,
    metadata jsonb, max_payload_bytes integer, max_id_bytes integer, max_metadata_bytes integer)
returns text
language sql
stable
as $$
    select case
        when _event_problem.tenant is null then 'tenant is required (use '''' for a single-tenant service)'
        when _event_problem.stream_id is null or _event_problem.stream_id = '' then 'stream_id is required'
        when _event_problem.stream_version is null then 'stream_version is required'
        when _event_problem.event_type is null or _event_problem.event_type = '' then 'event_type is required'
        when _event_problem.payload is null then 'payload is required (use an empty value for none)'
        when _event_problem.stream_version < 1 then pg_catalog.format(
            'stream_version %s is invalid: expected >= 1', _event_problem.stream_version)
        when pg_catalog.octet_length(_event_problem.tenant) > _event_problem.max_id_bytes then pg_catalog.format(
            'tenant is %s bytes: the limit is %s (streamseal.limits max_id_bytes)',
            pg_catalog.octet_length(_event_problem.tenant), _event_problem.max_id_bytes)
        when pg_catalog.octet_length(_event_problem.event_type) > _event_problem.max_id_bytes then pg_catalog.format(
            'event_type is %s bytes: the limit is %s (streamseal.limits max_id_bytes)',
            pg_catalog.octet_length(_event_problem.event_type), _event_problem.max_id_bytes)
        when pg_catalog.octet_length(_event_problem.stream_id) > _event_problem.max_id_bytes then pg_catalog.format(
            'stream_id is %s bytes: the limit is %s (streamseal.limits max_id_bytes)',
            pg_catalog.octet_length(_event_problem.stream_id), _event_problem.max_id_bytes)
        when pg_catalog.octet_length(_event_problem.payload) > _event_problem.max_payload_bytes then pg_catalog.format(
            'payload is %s bytes: the limit is %s (streamseal.limits max_payload_bytes)',
            pg_catalog.octet_length(_event_problem.payload), _event_problem.max_payload_bytes)
        when pg_catalog.octet_length(_event_problem.metadata::text) > _event_problem.max_metadata_bytes then pg_catalog.format(
            'metadata is %s bytes: the limit is %s (streamseal.limits max_metadata_bytes)',
            pg_catalog.octet_length(_event_problem.metadata::text), _event_problem.max_metadata_bytes)
        when coalesce(_event_problem.flags, 0) & ~7 <> 0 then pg_catalog.format(
            'flags %s has unknown bits %s (known: 1 ephemeral, 2 at-most-once, 4 state-only)',
            _event_problem.flags, _event_problem.flags & ~7)
    end
$$;

-- _counts_in_digest says whether an event is part of the integrity folds: stamped (a copy always
-- is) and neither ephemeral (1) nor an at-most-once occurrence (2).
create function streamseal._counts_in_digest(origin_seq bigint, flags integer)
returns boolean
language sql
immutable
as $$
    select _counts_in_digest.origin_seq is not null and _counts_in_digest.flags & 3 = 0
$$;

-- _h0 and _h1: the two 64-bit hashes of an event id, seeds 0 and 1 (DESIGN.md, "digest").
create function streamseal._h0(event_id uuid)
returns bigint
language sql
immutable
as $$ select pg_catalog.hashtextextended(_h0.event_id::text, 0) $$;

create function streamseal._h1(event_id uuid)
returns bigint
language sql
immutable
as $$ select pg_catalog.hashtextextended(_h1.event_id::text, 1) $$;
