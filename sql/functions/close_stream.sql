-- close_stream: close-the-books truncation of one own stream, the legitimate way history leaves
-- an origin's store. The DELETE trigger takes the removed events out of their digests in the
-- same transaction. (Epoch refolds and the origin generation bump join this when epochs exist.)

-- close_stream deletes the own-lane events of (tenant, stream_id) whose stream_version is below
-- below_version (all of the stream when null) and returns how many it removed.
create function streamseal.close_stream(tenant text, stream_id text, below_version bigint default null)
returns bigint
language plpgsql
volatile
set search_path = ''
as $$
declare
    self text := streamseal.service_name();
    removed bigint;
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
    return removed;
end
$$;
