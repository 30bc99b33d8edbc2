-- close_stream: close-the-books truncation of one own stream, the legitimate way history leaves
-- an origin's store. The DELETE trigger takes the removed events out of their digests and refolds
-- the sealed epochs they sat in (bumping the origin generation) in the same transaction; the close
-- is recorded in stream_closes so manifest answers can carry it to consumers, which apply it to
-- their copies with apply_stream_closes (below) instead of reading it as loss or extras.

-- close_stream deletes the own-lane events of (tenant, stream_id) whose stream_version is below
-- below_version (all of the stream when null) and returns how many it removed.
create function streamseal.close_stream(tenant text, stream_id text, below_version bigint default null)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    self text := streamseal.service_name();
    removed bigint;
    floor bigint;
begin
    if close_stream.tenant is null or close_stream.stream_id is null then
        raise exception 'close_stream: tenant and stream_id are required (got %, %)',
            coalesce(pg_catalog.quote_literal(close_stream.tenant), 'null'),
            coalesce(pg_catalog.quote_literal(close_stream.stream_id), 'null')
            using errcode = '22023';
    end if;

    delete from streamseal.events e
    where e.origin = self
      and e.tenant = close_stream.tenant
      and e.stream_id = close_stream.stream_id
      and (close_stream.below_version is null or e.stream_version < close_stream.below_version);
    get diagnostics removed = row_count;

    -- A whole-stream close is recorded as "below the largest version there can be".
    floor := coalesce(close_stream.below_version, 9223372036854775807);
    insert into streamseal.stream_closes as c (tenant, stream_id, below_version)
    values (close_stream.tenant, close_stream.stream_id, floor)
    on conflict on constraint stream_closes_pkey do update
        set below_version = greatest(c.below_version, excluded.below_version), closed_at = pg_catalog.now();
    return removed;
end
$$;

-- apply_stream_closes applies an origin's closes (a JSON array of {tenant, stream_id,
-- below_version}, as a manifest answer carries them) to this store's copies of that origin: the
-- copies below each floor are removed, once per floor, and recorded in copy_closes. This is the
-- origin's announced truncation replicated, not a deletion decided from a divergence (local
-- extras found by an audit are never deleted). Returns how many copies it removed.
create function streamseal.apply_stream_closes(origin text, closes jsonb)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    removed bigint;
begin
    if apply_stream_closes.origin is null or apply_stream_closes.origin = streamseal.service_name() then
        raise exception 'apply_stream_closes: origin % is invalid: expected another service',
            coalesce(pg_catalog.quote_literal(apply_stream_closes.origin), 'null')
            using errcode = '22023';
    end if;
    with fresh as (
        select c.tenant, c.stream_id, c.below_version
        from pg_catalog.jsonb_to_recordset(coalesce(apply_stream_closes.closes, '[]')) as c(tenant text, stream_id text, below_version bigint)
        left join streamseal.copy_closes k
          on k.origin = apply_stream_closes.origin and k.tenant = c.tenant and k.stream_id = c.stream_id
        where c.tenant is not null and c.stream_id is not null and c.below_version is not null
          and (k.below_version is null or k.below_version < c.below_version)
    ), recorded as (
        insert into streamseal.copy_closes as k (origin, tenant, stream_id, below_version)
        select apply_stream_closes.origin, f.tenant, f.stream_id, f.below_version from fresh f
        on conflict on constraint copy_closes_pkey do update
            set below_version = greatest(k.below_version, excluded.below_version), applied_at = pg_catalog.now()
    ), gone as (
        delete from streamseal.events e
        using fresh f
        where e.origin = apply_stream_closes.origin and e.tenant = f.tenant and e.stream_id = f.stream_id
          and e.stream_version < f.below_version
        returning 1
    )
    select pg_catalog.count(*) into removed from gone;
    return removed;
end
$$;
