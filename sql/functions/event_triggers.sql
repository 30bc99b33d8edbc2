-- What every write to streamseal.events does, whichever path wrote it (append, ingest, the
-- stamper, close_stream, reaping, reclassification, or an application's own INSERT / UPDATE /
-- DELETE): keep the own-versus-copy rule, hand the counted changes to _fold_changes(), record
-- changes of own sealed history as facts that travel (history_changes.sql), and wake the stamper
-- (only while one sleeps: stamper_sleep.sql) and feed readers. Statement-level triggers over
-- transition tables: one fold per statement.

-- _events_inserted guards the own/copy rule, folds inserted copies and queues own events for the
-- stamper. Own events arrive unstamped and are folded when the stamper numbers them (stamp.sql).
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
    has_copies boolean;
    has_counted boolean;
begin
    -- One pass decides what this statement needs; an own append needs only the wake-up.
    select s.name,
           pg_catalog.bool_or((i.origin = s.name) = (i.origin_seq is not null)),
           pg_catalog.bool_or(i.origin_seq is null),
           pg_catalog.bool_or(i.origin_seq is not null),
           pg_catalog.bool_or(streamseal._counts_in_digest(i.origin_seq, i.flags))
    into self, has_misfit, has_unstamped, has_copies, has_counted
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
        -- The stamper's queue (migration 032): visible to it when this transaction commits.
        -- With its keys (migration 034): stamp() takes them from the claimed row, never from events.
        insert into streamseal.unstamped (local_id, event_id, tenant, event_type, stream_id, flags, stored_at)
        select i.local_id, i.event_id, i.tenant, i.event_type, i.stream_id, i.flags, i.stored_at
        from inserted i where i.origin_seq is null;
        -- Wake the stamper only if one sleeps (issue 16: a NOTIFY takes a global lock at commit
        -- and cost a fifth to a third of transactional throughput; a busy stamper needs none).
        -- The sleep lock is held shared to commit when no sleeper has it, so no stamper can go to
        -- sleep until this transaction's queue rows are visible to its last look
        -- (stamper_sleep.sql). Same key as streamseal._stamper_sleep_key(), folded to a constant.
        if not pg_catalog.pg_try_advisory_xact_lock_shared(pg_catalog.hashtextextended('streamseal.stamper_sleep', 0)) then
            perform pg_catalog.pg_notify('streamseal_unstamped', '');
        end if;
    end if;

    -- Wake feed readers (LISTEN streamseal_feed): copies are readable when this transaction
    -- commits. Own events become readable when stamped, and stamp() wakes the same readers
    -- through streamseal_stamped, so an own append sends no feed notification. (This was a
    -- second statement trigger, events_feed_notify, in feed.sql: one PL/pgSQL call per statement
    -- less, and one NOTIFY per own append less; issue 16, write3.)
    if has_copies then
        perform pg_catalog.pg_notify('streamseal_feed', '');
    end if;
    return null;
end
$$;

-- _events_deleted takes deleted events out of their folds. An own event's numbers are in
-- own_numbers (or, stamped before issue 16, in the row itself); its own_numbers row goes with it
-- (the number is never reused: stamp_state), and an unstamped one leaves the stamper's queue.
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
    -- No name yet: no own events either.
    self text := (select s.name from streamseal.service s);
    own_changes streamseal._counted_change[];
    generation bigint;
begin
    -- Unstamped own events leave the stamper's queue (nothing to number: no gap, no ghost).
    -- By key arrays: one index probe each, never a join the planner may turn into a scan.
    delete from streamseal.unstamped u
    where u.local_id = any (array(select d.local_id from deleted d where d.origin = self and d.origin_seq is null));

    -- Copies and own events stamped before issue 16 carry their numbers; own events numbered in
    -- own_numbers take them from there as their rows go.
    changes := array(
        select row(d.origin, d.origin_seq, d.tenant, d.event_type, d.stream_id, d.event_id, -1)::streamseal._counted_change
        from deleted d
        where streamseal._counts_in_digest(d.origin_seq, d.flags));
    if exists (select from deleted d where d.origin = self and d.origin_seq is null) then
        with gone as (
            delete from streamseal.own_numbers n
            where n.local_id = any (array(select d.local_id from deleted d where d.origin = self and d.origin_seq is null))
            returning n.origin, n.origin_seq, n.tenant, n.event_type, n.local_id
        )
        select pg_catalog.array_agg(row(g.origin, g.origin_seq, g.tenant, g.event_type, d.stream_id, d.event_id, -1)::streamseal._counted_change)
        into own_changes
        from gone g
        join deleted d on d.local_id = g.local_id
        where streamseal._counts_in_digest(g.origin_seq, d.flags);
        changes := changes || coalesce(own_changes, '{}');
    end if;
    if pg_catalog.cardinality(changes) = 0 then
        return null;
    end if;
    perform streamseal._fold_changes(changes);

    -- Own sealed history removed (an application's DELETE, close_stream): a fact that travels.
    if exists (select from pg_catalog.unnest(changes) c where c.origin = self) then
        generation := streamseal._history_changing();
        insert into streamseal.history_changes (kind, event_id, tenant, event_type, stream_id, origin_seq, flags, generation)
        select 'removed', c.event_id, c.tenant, c.event_type, c.stream_id, c.origin_seq, d.flags, generation
        from pg_catalog.unnest(changes) c
        join deleted d on d.event_id = c.event_id
        where c.origin = self
        order by c.origin_seq;
    end if;
    return null;
end
$$;

-- _events_updated moves each updated event's contribution from its old place to its new one:
-- reclassification (ephemeral: no longer counted), or an application rewriting an unstamped event
-- or a copy. Unchanged contributions cancel (h XOR h = 0, -1 + 1 = 0). It refuses a rewrite of a
-- stamped own counted event's identity, and of what any stamped own event's numbers are keyed on,
-- and records fold-bit changes of stamped own events as history changes. (The stamper no longer
-- updates events: issue 16.) An own event's numbers are in own_numbers, or in the row itself when
-- it was stamped before issue 16.
-- _updated_pair: an updated event's old and new row (a_ prefix), each with its numbers.
create type streamseal._updated_pair as (
    local_id bigint, event_id uuid, origin text, origin_seq bigint, type_seq bigint, tenant text,
    stream_id text, stream_version bigint, event_type text, flags integer, payload bytea,
    a_event_id uuid, a_origin text, a_origin_seq bigint, a_type_seq bigint, a_tenant text,
    a_stream_id text, a_stream_version bigint, a_event_type text, a_flags integer, a_payload bytea,
    numbered_apart boolean
);

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
    own_rows boolean;
    stamped_own boolean;
    pairs streamseal._updated_pair[];
    rewritten record;
    generation bigint;
begin
    own_rows := exists (select from before_update o where o.origin = self);
    if not own_rows then
        -- Copies only: their numbers are in the rows.
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
    end if;

    -- GUARD: own events are numbered only by the stamper.
    select o.event_id into rewritten
    from before_update o join after_update a on a.local_id = o.local_id
    where o.origin = self and o.origin_seq is null and (a.origin_seq is not null or a.type_seq is not null)
    limit 1;
    if found then
        raise exception 'event % is an own event: own events are numbered by the stamper, their origin_seq and type_seq cannot be set',
            rewritten.event_id
            using errcode = '0A000';
    end if;

    -- Old and new rows pair by local_id (generated always: no UPDATE can change it), each with
    -- its numbers.
    pairs := array(
    select row(o.local_id, o.event_id, o.origin, coalesce(o.origin_seq, n.origin_seq), coalesce(o.type_seq, n.type_seq),
           o.tenant, o.stream_id, o.stream_version, o.event_type, o.flags, o.payload,
           a.event_id, a.origin,
           case when n.event_id is not null then n.origin_seq else a.origin_seq end,
           case when n.event_id is not null then n.type_seq else a.type_seq end,
           a.tenant, a.stream_id, a.stream_version, a.event_type, a.flags, a.payload,
           n.event_id is not null)::streamseal._updated_pair
    from before_update o
    join after_update a on a.local_id = o.local_id
    -- A local_id probe per updated row, fenced (offset 0): the statement's rows lead, never a
    -- read of the whole own_numbers table.
    left join lateral (
        select x.event_id, x.origin_seq, x.type_seq from streamseal.own_numbers x
        where o.origin = self and o.origin_seq is null and x.local_id = o.local_id
        offset 0
    ) n on true);

    stamped_own := exists (select from pg_catalog.unnest(pairs) p where p.origin = self and p.origin_seq is not null);

    if stamped_own then
        -- GUARD: a stamped own counted event keeps its identity and payload (invariant 3):
        -- consumers hold those bytes and a digest folds only ids, so a rewrite would diverge where
        -- no audit sees it. Ephemeral and at-most-once events are outside sealed history
        -- (retention is free), but numbered ones keep what their numbers are keyed on.
        select p.event_id, p.origin_seq into rewritten
        from pg_catalog.unnest(pairs) p
        where p.origin = self and p.origin_seq is not null
          and ((p.flags & 3 = 0
                and (p.event_id, p.origin, p.origin_seq, p.type_seq, p.tenant, p.stream_id, p.stream_version, p.event_type, p.payload)
                    is distinct from
                    (p.a_event_id, p.a_origin, p.a_origin_seq, p.a_type_seq, p.a_tenant, p.a_stream_id, p.a_stream_version, p.a_event_type, p.a_payload))
               or (p.numbered_apart
                   and (p.event_id, p.origin, p.tenant, p.event_type)
                       is distinct from (p.a_event_id, p.a_origin, p.a_tenant, p.a_event_type)))
        limit 1;
        if found then
            raise exception 'event % (origin "%", origin_seq %) is stamped: its identity (event_id, origin, sequences, tenant, stream, version, type, payload) cannot change; append a new event, or remove it with DELETE or streamseal.close_stream',
                rewritten.event_id, self, rewritten.origin_seq
                using errcode = '0A000';
        end if;
    end if;

    -- A numbered own event's flags and stream follow it into own_numbers (its other keys cannot
    -- change: the guard above).
    update streamseal.own_numbers n set flags = p.a_flags, stream_id = p.a_stream_id
    from pg_catalog.unnest(pairs) p
    where p.numbered_apart and n.local_id = p.local_id
      and (p.flags, p.stream_id) is distinct from (p.a_flags, p.a_stream_id);

    -- An unstamped own event stays queued under its (new) id and keys, which stamp() numbers and
    -- folds from (migration 034); one that stops being own leaves the queue. Touching its queue
    -- row waits for a stamper that claimed it (stamp.sql); if that stamper numbered it meanwhile,
    -- what its numbers and fold were taken from must not change under them.
    if exists (select from pg_catalog.unnest(pairs) p where p.origin = self and p.origin_seq is null) then
        update streamseal.unstamped u
        set event_id = p.a_event_id, tenant = p.a_tenant, event_type = p.a_event_type,
            stream_id = p.a_stream_id, flags = p.a_flags, stored_at = a.stored_at
        from pg_catalog.unnest(pairs) p
        join after_update a on a.local_id = p.local_id
        where u.local_id = p.local_id and p.origin = self and p.origin_seq is null and p.a_origin = self;
        delete from streamseal.unstamped u
        where u.local_id = any (array(
            select p.local_id from pg_catalog.unnest(pairs) p
            where p.origin = self and p.origin_seq is null and p.a_origin is distinct from self));
        select p.event_id into rewritten
        from pg_catalog.unnest(pairs) p
        join streamseal.own_numbers n on n.local_id = p.local_id
        where p.origin = self and p.origin_seq is null
          and (p.event_id, p.origin, p.tenant, p.stream_id, p.stream_version, p.event_type, p.flags, p.payload)
              is distinct from
              (p.a_event_id, p.a_origin, p.a_tenant, p.a_stream_id, p.a_stream_version, p.a_event_type, p.a_flags, p.a_payload)
        limit 1;
        if found then
            raise exception 'event % was stamped while this statement changed it: its identity cannot change now; append a new event, or remove it with DELETE or streamseal.close_stream',
                rewritten.event_id
                using errcode = '40001';
        end if;
    end if;

    changes := array(
        select row(p.origin, p.origin_seq, p.tenant, p.event_type, p.stream_id, p.event_id, -1)::streamseal._counted_change
        from pg_catalog.unnest(pairs) p
        where streamseal._counts_in_digest(p.origin_seq, p.flags)
        union all
        select row(p.a_origin, p.a_origin_seq, p.a_tenant, p.a_event_type, p.a_stream_id, p.a_event_id, 1)::streamseal._counted_change
        from pg_catalog.unnest(pairs) p
        where streamseal._counts_in_digest(p.a_origin_seq, p.a_flags));
    if pg_catalog.cardinality(changes) > 0 then
        perform streamseal._fold_changes(changes);
    end if;

    -- The fold bits (1 ephemeral, 2 at-most-once) of stamped own events changed
    -- (reclassify_ephemeral, or an application's UPDATE): a fact that travels.
    if stamped_own and exists (
            select from pg_catalog.unnest(pairs) p
            where p.origin = self and p.origin_seq is not null and p.flags & 3 <> p.a_flags & 3) then
        generation := streamseal._history_changing();
        insert into streamseal.history_changes (kind, event_id, tenant, event_type, stream_id, origin_seq, flags, generation)
        select 'reclassified', p.a_event_id, p.a_tenant, p.a_event_type, p.a_stream_id, p.a_origin_seq, p.a_flags, generation
        from pg_catalog.unnest(pairs) p
        where p.origin = self and p.origin_seq is not null and p.flags & 3 <> p.a_flags & 3
        order by p.a_origin_seq;
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

