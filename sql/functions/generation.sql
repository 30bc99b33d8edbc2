-- The origin generation and the legitimate mutations that move it. A mutation of this service's
-- sealed history goes through the write-path triggers, which refold the closed epochs it touches
-- at once and bump the generation once per statement that changed a sealed fold.

-- origin_generation returns this service's current generation (it rides every manifest answer).
create function streamseal.origin_generation()
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$ select g.generation from streamseal.origin_generation g $$;

-- reclassify_ephemeral marks the own events of event_type (in tenant, or all tenants when null)
-- ephemeral: they leave every fold, their sealed epochs are refolded, and the generation moves.
-- Returns how many events it reclassified.
create function streamseal.reclassify_ephemeral(event_type text, tenant text default null)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    changed bigint;
begin
    if reclassify_ephemeral.event_type is null or reclassify_ephemeral.event_type = '' then
        raise exception 'reclassify_ephemeral: event_type is required' using errcode = '22023';
    end if;
    update streamseal.events e
    set flags = e.flags | 1
    where e.origin = streamseal.service_name()
      and e.event_type = reclassify_ephemeral.event_type
      and (reclassify_ephemeral.tenant is null or e.tenant = reclassify_ephemeral.tenant)
      and e.flags & 1 = 0;
    get diagnostics changed = row_count;
    return changed;
end
$$;
