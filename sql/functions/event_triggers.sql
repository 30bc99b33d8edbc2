-- What every write to streamseal.events does, whichever path wrote it (append, ingest, the
-- stamper, close_stream, reaping, reclassification, or an application's own INSERT / UPDATE /
-- DELETE): keep the own-versus-copy rule, hand the counted changes to _fold_changes(), record
-- changes of own sealed history as facts that travel (history_changes.sql), and wake the stamper. Statement-level triggers over transition tables: one fold per statement.

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
    self text;
    generation bigint;
begin
    changes := array(
        select row(d.origin, d.origin_seq, d.tenant, d.event_type, d.stream_id, d.event_id, -1)::streamseal._counted_change
        from deleted d
        where streamseal._counts_in_digest(d.origin_seq, d.flags));
    if pg_catalog.cardinality(changes) = 0 then
        return null;
    end if;
    perform streamseal._fold_changes(changes);

    -- Own sealed history removed (an application's DELETE, close_stream): a fact that travels.
    self := (select s.name from streamseal.service s);
    if exists (select from pg_catalog.unnest(changes) c where c.origin = self) then
        generation := streamseal._history_changing();
        insert into streamseal.history_changes (kind, event_id, tenant, event_type, stream_id, origin_seq, flags, generation)
        select 'removed', d.event_id, d.tenant, d.event_type, d.stream_id, d.origin_seq, d.flags, generation
        from deleted d
        where d.origin = self and streamseal._counts_in_digest(d.origin_seq, d.flags)
        order by d.origin_seq;
    end if;
    return null;
end
$$;

-- _events_updated moves each updated event's contribution from its old place to its new one:
-- stamping (counted from now on), reclassification (ephemeral: no longer counted), or an
-- application rewriting an unstamped event or a copy. Unchanged contributions cancel (h XOR h = 0,
-- -1 + 1 = 0). It refuses a rewrite of a stamped own counted event's identity and records fold-bit
-- changes of stamped own events as history changes.
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
    -- No name yet: no own events either (and no error for an UPDATE that touched nothing).
    self text := (select s.name from streamseal.service s);
    stamped_own boolean;
    rewritten record;
    generation bigint;
begin
    -- Old and new rows pair by local_id (generated always: no UPDATE can change it). The
    -- stamper's updates start unstamped, so this test is all they pay here.
    stamped_own := exists (select from before_update o where o.origin = self and o.origin_seq is not null);

    -- GUARD: a stamped own counted event keeps its identity and payload (invariant 3): consumers
    -- hold those bytes and a digest folds only ids, so a rewrite would diverge where no audit
    -- sees it. Ephemeral and at-most-once events are outside sealed history (retention is free).
    if stamped_own then
        select o.event_id, o.origin_seq into rewritten
        from before_update o join after_update a on a.local_id = o.local_id
        where o.origin = self and o.origin_seq is not null and o.flags & 3 = 0
          and (o.event_id, o.origin, o.origin_seq, o.type_seq, o.tenant, o.stream_id, o.stream_version, o.event_type, o.payload)
              is distinct from
              (a.event_id, a.origin, a.origin_seq, a.type_seq, a.tenant, a.stream_id, a.stream_version, a.event_type, a.payload)
        limit 1;
        if found then
            raise exception 'event % (origin "%", origin_seq %) is stamped: its identity (event_id, origin, sequences, tenant, stream, version, type, payload) cannot change; append a new event, or remove it with DELETE or streamseal.close_stream',
                rewritten.event_id, self, rewritten.origin_seq
                using errcode = '0A000';
        end if;
    end if;

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

    -- The fold bits (1 ephemeral, 2 at-most-once) of stamped own events changed
    -- (reclassify_ephemeral, or an application's UPDATE): a fact that travels.
    if stamped_own and exists (
            select from before_update o join after_update a on a.local_id = o.local_id
            where o.origin = self and o.origin_seq is not null and o.flags & 3 <> a.flags & 3) then
        generation := streamseal._history_changing();
        insert into streamseal.history_changes (kind, event_id, tenant, event_type, stream_id, origin_seq, flags, generation)
        select 'reclassified', a.event_id, a.tenant, a.event_type, a.stream_id, a.origin_seq, a.flags, generation
        from before_update o join after_update a on a.local_id = o.local_id
        where o.origin = self and o.origin_seq is not null and o.flags & 3 <> a.flags & 3
        order by a.origin_seq;
    end if;
    return null;
end
$$;

-- _events_truncate_refused refuses TRUNCATE of the store: a statement trigger cannot see the rows,
-- so no fact could tell consumers which events left, and copies of other origins would go too.
create function streamseal._events_truncate_refused()
returns trigger
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception 'TRUNCATE of streamseal.events is refused: consumers could not learn which events left; close own streams with streamseal.close_stream(tenant, stream_id), or DELETE own events (both travel to consumers)'
        using errcode = '0A000';
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

create trigger events_truncate_refused
    before truncate on streamseal.events
    for each statement execute function streamseal._events_truncate_refused();

