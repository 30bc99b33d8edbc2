-- What every write to streamseal.events does, whichever path wrote it (append, ingest, the
-- stamper, close_stream, reaping, reclassification, or an application's own INSERT / UPDATE /
-- DELETE): keep the own-versus-copy rule, hand the counted changes to _fold_changes(), and wake
-- the stamper. Statement-level triggers over transition tables: one fold per statement.

-- _events_inserted guards the own/copy rule and folds inserted copies. Own events arrive
-- unstamped and are folded when the stamper numbers them (the UPDATE trigger below).
create function streamseal._events_inserted()
returns trigger
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    self text;
    misfit record;
    has_misfit boolean;
    has_unstamped boolean;
    has_counted boolean;
begin
    -- One pass decides what this statement needs; an own append needs only the wake-up.
    select s.name,
           pg_catalog.bool_or((i.origin = s.name) = (i.origin_seq is not null)),
           pg_catalog.bool_or(i.origin_seq is null),
           pg_catalog.bool_or(streamseal._counts_in_digest(i.origin_seq, i.flags))
    into self, has_misfit, has_unstamped, has_counted
    from inserted i
    cross join streamseal.service s
    group by s.name;
    if self is null then
        -- No rows inserted, or no service name (then service_name() raises its error).
        perform streamseal.service_name();
        return null;
    end if;

    -- GUARD: own events are numbered only by the stamper; copies carry their origin's numbers.
    if has_misfit then
        select i.event_id, i.origin, i.origin_seq into misfit
        from inserted i
        where (i.origin = self) = (i.origin_seq is not null)
        limit 1;
        if misfit.origin = self then
            raise exception 'event % claims origin "%" (this service) with origin_seq %: own events are numbered by the stamper, insert them with origin_seq null',
                misfit.event_id, misfit.origin, misfit.origin_seq
                using errcode = '22023';
        end if;
        raise exception 'event % from origin "%" has no origin_seq: a copy must carry its origin''s sequence',
            misfit.event_id, misfit.origin
            using errcode = '22023';
    end if;

    if has_counted then
        perform streamseal._fold_changes(array(
            select row(i.origin, i.origin_seq, i.tenant, i.event_type, i.stream_id, i.event_id, 1)::streamseal._counted_change
            from inserted i
            where streamseal._counts_in_digest(i.origin_seq, i.flags)));
    end if;

    if has_unstamped then
        perform pg_catalog.pg_notify('streamseal_unstamped', '');
    end if;
    return null;
end
$$;

-- _events_deleted takes deleted events out of their folds.
create function streamseal._events_deleted()
returns trigger
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    changes streamseal._counted_change[];
begin
    changes := array(
        select row(d.origin, d.origin_seq, d.tenant, d.event_type, d.stream_id, d.event_id, -1)::streamseal._counted_change
        from deleted d
        where streamseal._counts_in_digest(d.origin_seq, d.flags));
    if pg_catalog.cardinality(changes) > 0 then
        perform streamseal._fold_changes(changes);
    end if;
    return null;
end
$$;

-- _events_updated moves each updated event's contribution from its old place to its new one:
-- stamping (counted from now on), reclassification (ephemeral: no longer counted), or an
-- application rewriting identity columns. Unchanged contributions cancel (h XOR h = 0, -1 + 1 = 0).
create function streamseal._events_updated()
returns trigger
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
as $$
declare
    changes streamseal._counted_change[];
begin
    changes := array(
        select row(o.origin, o.origin_seq, o.tenant, o.event_type, o.stream_id, o.event_id, -1)::streamseal._counted_change
        from before_update o
        where streamseal._counts_in_digest(o.origin_seq, o.flags)
        union all
        select row(a.origin, a.origin_seq, a.tenant, a.event_type, a.stream_id, a.event_id, 1)::streamseal._counted_change
        from after_update a
        where streamseal._counts_in_digest(a.origin_seq, a.flags));
    if pg_catalog.cardinality(changes) > 0 then
        perform streamseal._fold_changes(changes);
    end if;
    return null;
end
$$;

-- _events_truncated empties every fold with the store and starts a new origin generation.
create function streamseal._events_truncated()
returns trigger
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    delete from streamseal.stream_digests;
    delete from streamseal.digest_epochs;
    delete from streamseal.sealed_prefix;
    delete from streamseal.lane_epochs;
    -- Whatever consumers sealed of this service's history is gone with it.
    perform streamseal._bump_origin_generation();
    return null;
end
$$;

create trigger events_inserted
    after insert on streamseal.events
    referencing new table as inserted
    for each statement execute function streamseal._events_inserted();

create trigger events_deleted
    after delete on streamseal.events
    referencing old table as deleted
    for each statement execute function streamseal._events_deleted();

-- Postgres allows no column list with transition tables, so every UPDATE fires this; a
-- metadata-only update folds nothing (its contributions cancel).
create trigger events_updated
    after update on streamseal.events
    referencing old table as before_update new table as after_update
    for each statement execute function streamseal._events_updated();

create trigger events_truncated
    after truncate on streamseal.events
    for each statement execute function streamseal._events_truncated();
