-- limits: the sizes the door (append, ingest) accepts, read from streamseal.limits (migration
-- 016). Operators change them with set_limits; `streamseal run` reads them at start to check the
-- payload limit against the broker's max_payload.

-- limits answers the limits in force.
create function streamseal.limits()
returns table (max_payload_bytes integer, max_id_bytes integer, max_metadata_bytes integer)
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select l.max_payload_bytes, l.max_id_bytes, l.max_metadata_bytes from streamseal.limits l
$$;

-- set_limits changes the limits named (null keeps one); limits() reads them back. Events
-- already stored are not re-checked: one the relay can no longer carry is quarantined there.
create function streamseal.set_limits(
    max_payload_bytes integer default null, max_id_bytes integer default null,
    max_metadata_bytes integer default null)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    if set_limits.max_payload_bytes is not null and set_limits.max_payload_bytes not between 1 and 67108864 then
        raise exception 'set_limits: max_payload_bytes % is out of range: expected 1..67108864', set_limits.max_payload_bytes
            using errcode = '22023';
    end if;
    if set_limits.max_id_bytes is not null and set_limits.max_id_bytes not between 1 and 512 then
        raise exception 'set_limits: max_id_bytes % is out of range: expected 1..512 (tenant, event type and stream id share index rows)', set_limits.max_id_bytes
            using errcode = '22023';
    end if;
    if set_limits.max_metadata_bytes is not null and set_limits.max_metadata_bytes not between 0 and 1048576 then
        raise exception 'set_limits: max_metadata_bytes % is out of range: expected 0..1048576', set_limits.max_metadata_bytes
            using errcode = '22023';
    end if;
    update streamseal.limits l
    set max_payload_bytes = coalesce(set_limits.max_payload_bytes, l.max_payload_bytes),
        max_id_bytes = coalesce(set_limits.max_id_bytes, l.max_id_bytes),
        max_metadata_bytes = coalesce(set_limits.max_metadata_bytes, l.max_metadata_bytes);
end
$$;
