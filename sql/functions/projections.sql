-- projections.sql: projections and reactors over the feed, and the local coverage audit (issue
-- 19; DESIGN.md "Read side", "Coverage"; the proposal's Phase L). Applications register SQL
-- handlers here; `streamseal run` (controlplane/projections) calls run_handler when the feed
-- wakes it and coverage_audit on the deep audit's schedule; `streamseal audit --local` runs it
-- by hand.
--
-- Registration is an application entry point (SECURITY DEFINER, granted in privileges.sql); the
-- handlers run with the rights of the role that runs run_handler (the control plane), which must
-- be granted what they touch.
--
-- A projection builds state: every event of its types in feed order, state-only ones included,
-- and a cursor per bucket (projection_cursors) folded like stream_digests in the transaction of
-- its own writes. A reactor does side effects: live and repaired events, never a state-only one
-- (backfill builds state and never re-fires triggers). A handler that raises parks its stream
-- (that stream waits, nothing is skipped past the failing event) and is retried with backoff;
-- other streams and handlers go on (invariant 13).

-- _handler_lock_key: one runner (or rebuild) of a handler at a time, across replicas.
create function streamseal._handler_lock_key(name text)
returns bigint
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select pg_catalog.hashtextextended('streamseal.handler:' || _handler_lock_key.name, 0) $$;

-- _handler_types normalizes a list of names (sorted, distinct) so registrations compare as sets.
create function streamseal._handler_types(names text[])
returns text[]
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select case when _handler_types.names is null then null
                else (select pg_catalog.array_agg(distinct t.n order by t.n) from pg_catalog.unnest(_handler_types.names) t(n)) end
$$;

-- _handler_require_function refuses a function that does not take exactly the arguments expected.
create function streamseal._handler_require_function(caller text, what text, fn regproc, expected regtype[])
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    got regtype[];
begin
    select pg_catalog.array_agg(a.t::regtype order by a.i) into got
    from pg_catalog.pg_proc p, pg_catalog.unnest(p.proargtypes::oid[]) with ordinality a(t, i)
    where p.oid = _handler_require_function.fn;
    if coalesce(got, '{}') is distinct from _handler_require_function.expected then
        raise exception '%: % % takes (%): expected a function of (%)', _handler_require_function.caller,
            _handler_require_function.what, _handler_require_function.fn,
            pg_catalog.array_to_string(coalesce(got, '{}')::text[], ', '),
            pg_catalog.array_to_string(_handler_require_function.expected::text[], ', ')
            using errcode = '22023';
    end if;
end
$$;

-- _handler_feed_end is a token at the current end of the feed for a scope: where a handler that
-- must not see history (a reactor, a projection registered with from_start false) starts. It reads
-- the feed through once (the one-time cost of a registration).
create function streamseal._handler_feed_end(event_types text[], tenants text[], out token text, out skipped bigint)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    got bigint;
begin
    skipped := 0;
    loop
        select pg_catalog.count(f.event_id), pg_catalog.max(f.next_token) into got, token
        from streamseal.read_feed(_handler_feed_end.event_types, _handler_feed_end.tenants, token, 10000) f;
        exit when got = 0;
        skipped := skipped + got;
    end loop;
end
$$;

-- _register_handler: the one registration. New: inserted, reading from the beginning of the feed
-- (from_start) or from its current end. Registered already with the same kind, types, tenants and
-- runner: the functions (or whether an application projection can reset) are updated
-- ('updated') or nothing changes ('unchanged'); its token and cursors stay. Another kind, scope
-- or runner: refused (22023), nothing changes: a handler's state was built over its scope, and
-- reading a new scope into it would double-apply or skip; unregister_handler and register again
-- (the state is the application's to clear). runs_in 'application': no function here (handler
-- and reset null); the application calls feed_handler_advance with each batch.
create function streamseal._register_handler(caller text, kind text, name text, event_types text[], handler regproc,
                                             tenants text[], reset regproc, from_start boolean,
                                             runs_in text default 'control_plane', application_reset boolean default false)
returns text
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    types text[] := streamseal._handler_types(_register_handler.event_types);
    scope_tenants text[] := streamseal._handler_types(_register_handler.tenants);
    old streamseal.handlers;
    feed_end record;
begin
    if _register_handler.name is null or _register_handler.name !~ '^[a-z][a-z0-9_.-]{0,62}$' then
        raise exception '%: name % is invalid: expected [a-z][a-z0-9_.-]{0,62}', _register_handler.caller,
            coalesce(pg_catalog.quote_literal(_register_handler.name), 'null') using errcode = '22023';
    end if;
    if types is null or pg_catalog.cardinality(types) = 0 or exists (select from pg_catalog.unnest(types) t(n) where t.n is null or t.n = '') then
        raise exception '%: event_types % is invalid: expected a non-empty list of names', _register_handler.caller,
            coalesce(_register_handler.event_types::text, 'null') using errcode = '22023';
    end if;
    if _register_handler.tenants is not null and (pg_catalog.cardinality(_register_handler.tenants) = 0
       or exists (select from pg_catalog.unnest(_register_handler.tenants) t(n) where t.n is null)) then
        raise exception '%: tenants % is invalid: expected null (every tenant) or a non-empty list of names',
            _register_handler.caller, _register_handler.tenants using errcode = '22023';
    end if;
    if _register_handler.handler is null and _register_handler.runs_in = 'control_plane' then
        raise exception '%: handler is null: expected a function of (streamseal.handler_event)', _register_handler.caller
            using errcode = '22023';
    end if;
    if _register_handler.runs_in = 'control_plane' then
        perform streamseal._handler_require_function(_register_handler.caller, 'handler', _register_handler.handler,
            array['streamseal.handler_event'::regtype]);
    end if;
    -- GUARD: registration runs with the owner's rights (an application entry point); the caller
    -- names only functions it may execute itself.
    if (_register_handler.handler is not null
        and not pg_catalog.has_function_privilege(session_user, _register_handler.handler, 'EXECUTE'))
       or (_register_handler.reset is not null
           and not pg_catalog.has_function_privilege(session_user, _register_handler.reset, 'EXECUTE')) then
        raise exception '%: role % may not execute % or %', _register_handler.caller, session_user,
            _register_handler.handler, coalesce(_register_handler.reset::text, 'its reset hook')
            using errcode = '42501';
    end if;
    if _register_handler.reset is not null then
        perform streamseal._handler_require_function(_register_handler.caller, 'reset hook', _register_handler.reset,
            array['text'::regtype, 'text'::regtype, 'text'::regtype]);
    end if;

    perform pg_catalog.pg_advisory_xact_lock(streamseal._handler_lock_key(_register_handler.name));
    select * into old from streamseal.handlers h where h.name = _register_handler.name for update;
    if found then
        if old.kind <> _register_handler.kind or old.event_types <> types
           or old.tenants is distinct from scope_tenants then
            raise exception '%: % is registered as a % over types % and tenants %: a handler''s scope or kind does not change under its state; call streamseal.unregister_handler(%) and register it again (its state is yours to clear)',
                _register_handler.caller, pg_catalog.quote_literal(_register_handler.name), old.kind, old.event_types,
                coalesce(old.tenants::text, 'all'), pg_catalog.quote_literal(_register_handler.name)
                using errcode = '22023';
        end if;
        if old.runs_in <> _register_handler.runs_in then
            raise exception '%: % is run by the %, not the %: a handler''s runner does not change under its state; call streamseal.unregister_handler(%) and register it again (its state is yours to clear)',
                _register_handler.caller, pg_catalog.quote_literal(_register_handler.name), pg_catalog.replace(old.runs_in, '_', ' '),
                pg_catalog.replace(_register_handler.runs_in, '_', ' '), pg_catalog.quote_literal(_register_handler.name)
                using errcode = '22023';
        end if;
        if old.handler is not distinct from _register_handler.handler and old.reset is not distinct from _register_handler.reset
           and old.application_reset = _register_handler.application_reset then
            return 'unchanged';
        end if;
        update streamseal.handlers h set handler = _register_handler.handler, reset = _register_handler.reset,
            application_reset = _register_handler.application_reset
        where h.name = _register_handler.name;
        return 'updated';
    end if;

    -- A running control plane starts running it (controlplane/projections listens).
    perform pg_catalog.pg_notify('streamseal_handlers', _register_handler.name);
    if _register_handler.from_start then
        insert into streamseal.handlers (name, kind, event_types, tenants, handler, reset, token, born_late, runs_in,
                                         application_reset)
        values (_register_handler.name, _register_handler.kind, types, scope_tenants, _register_handler.handler,
                _register_handler.reset, null, false, _register_handler.runs_in, _register_handler.application_reset);
    else
        feed_end := streamseal._handler_feed_end(types, scope_tenants);
        insert into streamseal.handlers (name, kind, event_types, tenants, handler, reset, token, born_late, runs_in,
                                         application_reset)
        values (_register_handler.name, _register_handler.kind, types, scope_tenants, _register_handler.handler,
                _register_handler.reset, feed_end.token, feed_end.skipped > 0, _register_handler.runs_in,
                _register_handler.application_reset);
    end if;
    return 'registered';
end
$$;

-- register_projection registers a projection: handler(streamseal.handler_event) is called once per
-- event of its types (and tenants; null: all) in feed order, state-only events included; reset
-- (origin, tenant, stream_id), when given, clears the state it built for one stream, so the
-- coverage audit can rebuild that stream alone. from_start (default): the projection folds the
-- store's history through the feed first (a projection registered over existing history rebuilds
-- itself locally, no cross-service traffic); false: it starts at the feed's current end, and the
-- coverage audit finds the history it was born after (born_late) and rebuilds it, capped.
-- Returns 'registered', 'updated' or 'unchanged' (see _register_handler).
create function streamseal.register_projection(name text, event_types text[], handler regproc, tenants text[] default null,
                                               reset regproc default null, from_start boolean default true)
returns text
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select streamseal._register_handler('register_projection', 'projection', register_projection.name,
        register_projection.event_types, register_projection.handler, register_projection.tenants,
        register_projection.reset, coalesce(register_projection.from_start, true))
$$;

-- register_reactor registers a reactor: handler(streamseal.handler_event) is called once per live
-- or repaired event of its types (and tenants) in feed order, never for a state-only one. A
-- reactor starts at the feed's current end: history is never re-fired.
create function streamseal.register_reactor(name text, event_types text[], handler regproc, tenants text[] default null)
returns text
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select streamseal._register_handler('register_reactor', 'reactor', register_reactor.name,
        register_reactor.event_types, register_reactor.handler, register_reactor.tenants, null, false)
$$;

-- register_feed_projection registers a projection the application runs itself (the Go feed
-- package's feed.Options{Name: …}, or any client keeping the same contract): it reads the feed
-- and, in the transaction of each batch's writes, calls feed_handler_advance, which folds the
-- batch into its cursors and stores its token, so the coverage audit covers it as it covers a SQL
-- projection. resettable: the application can reset one stream's state; the coverage audit then
-- asks it to rebuild a stream (projection_rebuild_requests; the subscriber takes each with
-- projection_rebuild_take and projection_rebuild_replay) instead of calling a reset function.
-- from_start as register_projection. Returns 'registered', 'updated' or 'unchanged'.
create function streamseal.register_feed_projection(name text, event_types text[], tenants text[] default null,
                                                    resettable boolean default false, from_start boolean default true)
returns text
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select streamseal._register_handler('register_feed_projection', 'projection', register_feed_projection.name,
        register_feed_projection.event_types, null, register_feed_projection.tenants, null,
        coalesce(register_feed_projection.from_start, true), 'application',
        coalesce(register_feed_projection.resettable, false))
$$;

-- register_feed_reactor registers a reactor the application runs itself (its token is stored by
-- feed_handler_advance); it starts at the feed's current end, as register_reactor.
create function streamseal.register_feed_reactor(name text, event_types text[], tenants text[] default null)
returns text
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select streamseal._register_handler('register_feed_reactor', 'reactor', register_feed_reactor.name,
        register_feed_reactor.event_types, null, register_feed_reactor.tenants, null, false, 'application', false)
$$;

-- unregister_handler removes a handler with its token, cursors, failures and findings; the state
-- it built is the application's. Returns whether it was registered.
create function streamseal.unregister_handler(name text)
returns boolean
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pg_catalog.pg_advisory_xact_lock(streamseal._handler_lock_key(unregister_handler.name));
    -- The cursors have no foreign key (migration 039): deleted here; the rest cascades.
    delete from streamseal.projection_cursors c where c.projection = unregister_handler.name;
    delete from streamseal.handlers h where h.name = unregister_handler.name;
    return found;
end
$$;

-- _projection_stream_top is the highest stream_version a projection applied of a stream, over its
-- types: one primary-key lookup per type (with event_type only filtered, a probe would walk every
-- stream of the origin and tenant: measured, the bench's apply rate fell thirtyfold).
create function streamseal._projection_stream_top(name text, event_types text[], origin text, tenant text, stream_id text)
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.max(c.stream_version)
    from pg_catalog.unnest(_projection_stream_top.event_types) t(event_type)
    -- A fenced lateral probe: a lookup per type, never a join over the projection's cursors.
    cross join lateral (
        select x.stream_version from streamseal.projection_cursors x
        where x.projection = _projection_stream_top.name and x.origin = _projection_stream_top.origin
          and x.tenant = _projection_stream_top.tenant and x.event_type = t.event_type
          and x.stream_id = _projection_stream_top.stream_id
        offset 0
    ) c
$$;

-- _projection_hold records that a projection holds ev: it had applied version applied_version of
-- ev's stream already, so applying ev now would fold the stream out of order (issue 19 item 2).
create function streamseal._projection_hold(name text, ev streamseal.handler_event, applied_version bigint)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    insert into streamseal.projection_held (projection, origin, tenant, stream_id, event_id, event_type, stream_version,
                                            applied_version)
    values (_projection_hold.name, (_projection_hold.ev).origin, (_projection_hold.ev).tenant, (_projection_hold.ev).stream_id,
            (_projection_hold.ev).event_id, (_projection_hold.ev).event_type, (_projection_hold.ev).stream_version,
            _projection_hold.applied_version)
    on conflict do nothing
$$;

-- _projection_apply calls a projection's handler for one event and folds it into the bucket's
-- cursor, in the caller's transaction. An event a rebuild already replayed (visible in the
-- cursor's rebuilt_snapshot) is skipped: false. An event below a version of its stream the
-- projection applied already is held (_projection_hold), not applied: false.
create function streamseal._projection_apply(name text, handler regproc, ev streamseal.handler_event,
                                             event_types text[])
returns boolean
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    snap pg_snapshot;
    rebuilt_by xid8;
    landed xid8;
    top bigint;
    counts boolean := (_projection_apply.ev).flags & 3 = 0;
begin
    select c.rebuilt_snapshot, c.rebuilt_by into snap, rebuilt_by from streamseal.projection_cursors c
    where c.projection = _projection_apply.name and c.origin = (_projection_apply.ev).origin
      and c.tenant = (_projection_apply.ev).tenant and c.event_type = (_projection_apply.ev).event_type
      and c.stream_id = (_projection_apply.ev).stream_id;
    if snap is not null then
        select e.landed_xid into landed from streamseal.events e where e.event_id = (_projection_apply.ev).event_id;
        if landed is null or landed = rebuilt_by or pg_catalog.pg_visible_in_snapshot(landed, snap) then
            return false;
        end if;
    end if;
    top := streamseal._projection_stream_top(_projection_apply.name, _projection_apply.event_types,
        (_projection_apply.ev).origin, (_projection_apply.ev).tenant, (_projection_apply.ev).stream_id);
    if (_projection_apply.ev).stream_version < top then
        perform streamseal._projection_hold(_projection_apply.name, _projection_apply.ev, top);
        return false;
    end if;
    execute pg_catalog.format('select %s($1)', _projection_apply.handler) using _projection_apply.ev;
    insert into streamseal.projection_cursors as c (projection, origin, tenant, event_type, stream_id, n, x0, x1,
                                                    stream_version, origin_seq)
    values (_projection_apply.name, (_projection_apply.ev).origin, (_projection_apply.ev).tenant,
            (_projection_apply.ev).event_type, (_projection_apply.ev).stream_id, counts::integer,
            case when counts then streamseal._h0((_projection_apply.ev).event_id) else 0 end,
            case when counts then streamseal._h1((_projection_apply.ev).event_id) else 0 end,
            (_projection_apply.ev).stream_version, (_projection_apply.ev).origin_seq)
    on conflict (projection, origin, tenant, event_type, stream_id) do update
        set n = c.n + excluded.n, x0 = c.x0 # excluded.x0, x1 = c.x1 # excluded.x1,
            stream_version = greatest(c.stream_version, excluded.stream_version),
            origin_seq = greatest(c.origin_seq, excluded.origin_seq), updated_at = pg_catalog.now();
    return true;
end
$$;

-- _handler_apply applies one event to a handler: a reactor calls its handler; a projection
-- folds its cursor too. Returns whether the handler was called.
create function streamseal._handler_apply(h streamseal.handlers, ev streamseal.handler_event)
returns boolean
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    if (_handler_apply.h).kind = 'projection' then
        return streamseal._projection_apply((_handler_apply.h).name, (_handler_apply.h).handler, _handler_apply.ev,
            (_handler_apply.h).event_types);
    end if;
    execute pg_catalog.format('select %s($1)', (_handler_apply.h).handler) using _handler_apply.ev;
    return true;
end
$$;

-- _projection_cursor_fold folds events a projection applied into its cursors (count and XORs as
-- stream_digests folds them, the highest stream_version and origin_seq), one statement a batch.
create function streamseal._projection_cursor_fold(name text, evs streamseal.handler_event[])
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    insert into streamseal.projection_cursors as c (projection, origin, tenant, event_type, stream_id, n, x0, x1,
                                                    stream_version, origin_seq)
    select _projection_cursor_fold.name, e.origin, e.tenant, e.event_type, e.stream_id,
           pg_catalog.count(*) filter (where e.flags & 3 = 0),
           coalesce(pg_catalog.bit_xor(streamseal._h0(e.event_id)) filter (where e.flags & 3 = 0), 0),
           coalesce(pg_catalog.bit_xor(streamseal._h1(e.event_id)) filter (where e.flags & 3 = 0), 0),
           pg_catalog.max(e.stream_version), pg_catalog.max(e.origin_seq)
    from pg_catalog.unnest(_projection_cursor_fold.evs) e
    group by e.origin, e.tenant, e.event_type, e.stream_id
    on conflict (projection, origin, tenant, event_type, stream_id) do update
        set n = c.n + excluded.n, x0 = c.x0 # excluded.x0, x1 = c.x1 # excluded.x1,
            stream_version = greatest(c.stream_version, excluded.stream_version),
            origin_seq = greatest(c.origin_seq, excluded.origin_seq), updated_at = pg_catalog.now()
$$;

-- _projection_batch_fold takes, of a batch in feed order, the events a projection applies now
-- and folds them into its cursors (the caller hands them to the handler in the same transaction):
-- not those a rebuild already replayed (visible in their cursor's rebuilt_snapshot), and not
-- those below a version of their stream it applied already (before this batch, or earlier in
-- it): those are held (projection_held; the run rebuilds the stream in version order, or the
-- coverage audit does). The common case (every stream of the batch increasing, from above its
-- cursors) is proven by one set-based comparison; only a batch that fails it takes the
-- event-level selection. The fold is a statement of this function (a plan cached with it).
create function streamseal._projection_batch_fold(h streamseal.handlers, evs streamseal.handler_event[],
                                                  out todo streamseal.handler_event[], out held integer)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    fresh streamseal.handler_event[];
    held_ids uuid[];
begin
    held := 0;
    if not exists (select from streamseal.projection_cursors c
                   where c.projection = (_projection_batch_fold.h).name and c.rebuilt_snapshot is not null) then
        fresh := _projection_batch_fold.evs;
    else
        fresh := array(
            select u from pg_catalog.unnest(_projection_batch_fold.evs) u
            where not exists (
                select from streamseal.projection_cursors c
                join streamseal.events x on x.event_id = u.event_id
                where c.projection = (_projection_batch_fold.h).name and c.rebuilt_snapshot is not null
                  and c.origin = u.origin and c.tenant = u.tenant and c.event_type = u.event_type
                  and c.stream_id = u.stream_id
                  and (x.landed_xid is null or x.landed_xid = c.rebuilt_by
                       or pg_catalog.pg_visible_in_snapshot(x.landed_xid, c.rebuilt_snapshot))));
    end if;
    if pg_catalog.cardinality(fresh) = 0 then
        todo := fresh;
        return;
    end if;

    -- The common case first, cheaply: every stream of the batch in increasing version order,
    -- from above what its cursors hold (one probe per (stream, type), no join of the batch with
    -- them: a nested loop of 500 events by 50 streams cost more than the cursor fold).
    if (
        with b as (
            select x.origin, x.tenant, x.stream_id, x.stream_version,
                   pg_catalog.lag(x.stream_version) over (partition by x.origin, x.tenant, x.stream_id
                                                          order by x.ordinality) as prev
            from pg_catalog.unnest(fresh) with ordinality x
        ), g as (
            select b.origin, b.tenant, b.stream_id, pg_catalog.min(b.stream_version) as first_version,
                   pg_catalog.bool_and(b.prev is null or b.stream_version > b.prev) as increasing
            from b group by b.origin, b.tenant, b.stream_id
        )
        select coalesce(pg_catalog.bool_and(g.increasing and (t.top is null or g.first_version > t.top)), true)
        from g
        cross join lateral (
            select pg_catalog.max(c.stream_version) as top
            from pg_catalog.unnest((_projection_batch_fold.h).event_types) ty(event_type)
            -- A fenced lateral probe: a lookup per key whatever the planner guesses of the
            -- table's size (a join over all of a projection's cursors grows with the store).
            cross join lateral (
                select x.stream_version from streamseal.projection_cursors x
                where x.projection = (_projection_batch_fold.h).name and x.origin = g.origin and x.tenant = g.tenant
                  and x.event_type = ty.event_type and x.stream_id = g.stream_id
                offset 0
            ) c
        ) t
    ) then
        todo := fresh;
    else
        -- Some stream is out of order: per event, against the highest version of its stream
        -- applied before it (its cursors, or earlier in the batch).
        with b as (
            select x.event_id, x.origin, x.tenant, x.stream_id, x.event_type, x.stream_version,
                   pg_catalog.max(x.stream_version) over (partition by x.origin, x.tenant, x.stream_id order by x.ordinality
                                                          rows between unbounded preceding and 1 preceding) as before_in_batch
            from pg_catalog.unnest(fresh) with ordinality x
        ), tops as (
            -- One primary-key lookup per (stream, type): see _projection_stream_top.
            select s.origin, s.tenant, s.stream_id, pg_catalog.max(c.stream_version) as top
            from (select distinct b.origin, b.tenant, b.stream_id from b) s
            cross join pg_catalog.unnest((_projection_batch_fold.h).event_types) t(event_type)
            left join lateral (
                select x.stream_version from streamseal.projection_cursors x
                where x.projection = (_projection_batch_fold.h).name and x.origin = s.origin and x.tenant = s.tenant
                  and x.event_type = t.event_type and x.stream_id = s.stream_id
                offset 0
            ) c on true
            group by s.origin, s.tenant, s.stream_id
        ), late as (
            select b.*, greatest(t.top, b.before_in_batch) as applied_version
            from b join tops t on t.origin = b.origin and t.tenant = b.tenant and t.stream_id = b.stream_id
            where b.stream_version < greatest(t.top, b.before_in_batch)
        ), recorded as (
            insert into streamseal.projection_held (projection, origin, tenant, stream_id, event_id, event_type, stream_version,
                                                    applied_version)
            select (_projection_batch_fold.h).name, l.origin, l.tenant, l.stream_id, l.event_id, l.event_type,
                   l.stream_version, l.applied_version
            from late l
            on conflict do nothing
        )
        select pg_catalog.array_agg(l.event_id) into held_ids from late l;

        if held_ids is null then
            todo := fresh;
        else
            todo := array(select u from pg_catalog.unnest(fresh) u where u.event_id <> all (held_ids));
            held := pg_catalog.cardinality(held_ids);
        end if;
    end if;

    -- The fold (as _projection_cursor_fold, inline: a plan cached with the function's, not
    -- planned again each batch).
    insert into streamseal.projection_cursors as c (projection, origin, tenant, event_type, stream_id, n, x0, x1,
                                                    stream_version, origin_seq)
    select (_projection_batch_fold.h).name, e.origin, e.tenant, e.event_type, e.stream_id,
           pg_catalog.count(*) filter (where e.flags & 3 = 0),
           coalesce(pg_catalog.bit_xor(streamseal._h0(e.event_id)) filter (where e.flags & 3 = 0), 0),
           coalesce(pg_catalog.bit_xor(streamseal._h1(e.event_id)) filter (where e.flags & 3 = 0), 0),
           pg_catalog.max(e.stream_version), pg_catalog.max(e.origin_seq)
    from pg_catalog.unnest(todo) e
    group by e.origin, e.tenant, e.event_type, e.stream_id
    on conflict (projection, origin, tenant, event_type, stream_id) do update
        set n = c.n + excluded.n, x0 = c.x0 # excluded.x0, x1 = c.x1 # excluded.x1,
            stream_version = greatest(c.stream_version, excluded.stream_version),
            origin_seq = greatest(c.origin_seq, excluded.origin_seq), updated_at = pg_catalog.now();
end
$$;


-- _handler_apply_batch applies a batch of events to a handler in one pass: the handler is called
-- once per event, in order, by one dynamic statement (a plan per batch, not per event). A reactor
-- skips state-only events; a projection skips events a rebuild already replayed, holds events
-- below a version of their stream it applied, and folds its cursors with what it applies, before
-- the calls, in the same transaction (_projection_batch_fold). The caller runs it in a
-- subtransaction and falls back to event by event (_handler_apply) when the handler raises.
create function streamseal._handler_apply_batch(h streamseal.handlers, evs streamseal.handler_event[],
                                                out applied integer, out skipped integer, out held integer)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    todo streamseal.handler_event[];
begin
    held := 0;
    if (_handler_apply_batch.h).kind = 'reactor' then
        todo := array(select u from pg_catalog.unnest(_handler_apply_batch.evs) u where u.flags & 4 = 0);
        skipped := pg_catalog.cardinality(_handler_apply_batch.evs) - pg_catalog.cardinality(todo);
    else
        select b.todo, b.held into todo, held from streamseal._projection_batch_fold(_handler_apply_batch.h, _handler_apply_batch.evs) b;
        skipped := 0;
    end if;
    applied := pg_catalog.cardinality(todo);
    if applied = 0 then
        return;
    end if;
    -- count(*) over the calls keeps each (volatile) call; unnest hands the events out in array
    -- order (a subscript walk would cost O(n) per element of a varlena array).
    execute pg_catalog.format('select pg_catalog.count(*) from (select %s(u) from pg_catalog.unnest($1) u) calls',
        (_handler_apply_batch.h).handler) using todo;
end
$$;

-- _application_handler locks a handler the application runs (one runner or rebuild of it at a
-- time, across processes) and returns it; refuses an unregistered name (P0002) and a handler the
-- control plane runs (22023).
create function streamseal._application_handler(caller text, name text)
returns streamseal.handlers
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    h streamseal.handlers;
begin
    perform pg_catalog.pg_advisory_xact_lock(streamseal._handler_lock_key(_application_handler.name));
    select * into h from streamseal.handlers x where x.name = _application_handler.name;
    if not found then
        raise exception '%: no handler % is registered', _application_handler.caller,
            coalesce(pg_catalog.quote_literal(_application_handler.name), 'null') using errcode = 'P0002';
    end if;
    if h.runs_in <> 'application' then
        raise exception '%: % is a SQL handler that streamseal run runs: the application does not advance it',
            _application_handler.caller, pg_catalog.quote_literal(h.name) using errcode = '22023';
    end if;
    return h;
end
$$;

-- feed_handler_advance is what an application handler (register_feed_projection,
-- register_feed_reactor) calls in the transaction of each batch it read from the feed, before its
-- own writes commit: it checks that the handler's stored token is still from_token (another
-- process running the same handler moved it: 55006, roll back and resume from the stored
-- token), stores to_token, and for a projection folds the batch (event_ids, in feed order; the
-- feed's origin_seqs beside them) into its cursors as run_handler does, leaving out what a
-- rebuild already replayed and holding what lands below a version of its stream already applied.
-- It returns the ids the handler must not apply (usually none); the handler applies the rest.
-- A projection that can reset is asked to rebuild up to max_order_rebuilds streams it holds
-- events of (_projection_order_rebuilds: projection_rebuild_requests, taken before its next read).
-- caught_up: the read found nothing and nothing held back (the coverage audit judges the
-- projection from then). A reactor's batch only moves its token.
create function streamseal.feed_handler_advance(name text, from_token text, to_token text, event_ids uuid[],
                                                origin_seqs bigint[], caught_up boolean, max_order_rebuilds integer default 5)
returns setof uuid
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    h streamseal.handlers := streamseal._application_handler('feed_handler_advance', feed_handler_advance.name);
    evs streamseal.handler_event[];
    todo streamseal.handler_event[];
    n_applied integer;
begin
    if pg_catalog.cardinality(coalesce(feed_handler_advance.event_ids, '{}'))
       <> pg_catalog.cardinality(coalesce(feed_handler_advance.origin_seqs, '{}')) then
        raise exception 'feed_handler_advance: % event ids and % origin_seqs: expected one origin_seq per event',
            pg_catalog.cardinality(coalesce(feed_handler_advance.event_ids, '{}')),
            pg_catalog.cardinality(coalesce(feed_handler_advance.origin_seqs, '{}')) using errcode = '22023';
    end if;
    if feed_handler_advance.to_token is null or feed_handler_advance.to_token = '' then
        raise exception 'feed_handler_advance: to_token is empty: expected the token the feed returned with the batch'
            using errcode = '22023';
    end if;
    if h.token is distinct from nullif(feed_handler_advance.from_token, '') then
        raise exception 'feed_handler_advance: the token of % moved since this batch was read: another process runs it; resume from its stored token',
            pg_catalog.quote_literal(h.name) using errcode = '55006';
    end if;
    n_applied := pg_catalog.cardinality(coalesce(feed_handler_advance.event_ids, '{}'));
    if h.kind = 'projection' and n_applied > 0 then
        evs := array(
            select row(e.event_id, e.origin, u.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
                       e.flags, null::bytea, null::jsonb, e.occurred_at, e.stored_at, false)::streamseal.handler_event
            from rows from (pg_catalog.unnest(feed_handler_advance.event_ids), pg_catalog.unnest(feed_handler_advance.origin_seqs)) with ordinality u(event_id, origin_seq, i)
            join streamseal.events e on e.event_id = u.event_id
            order by u.i);
        select b.todo into todo from streamseal._projection_batch_fold(h, evs) b;
        n_applied := pg_catalog.cardinality(todo);
        return query select u.event_id from pg_catalog.unnest(feed_handler_advance.event_ids) u(event_id)
                     except select t.event_id from pg_catalog.unnest(todo) t;
        perform streamseal._projection_order_rebuilds(h, coalesce(feed_handler_advance.max_order_rebuilds, 0));
    end if;
    update streamseal.handlers x
    set token = feed_handler_advance.to_token, applied = x.applied + n_applied, last_run_at = pg_catalog.now(),
        run_error = null, run_error_at = null,
        caught_up_at = case when feed_handler_advance.caught_up then pg_catalog.now() else x.caught_up_at end
    where x.name = h.name;
end
$$;

-- _projection_stream_events: one stream's events of a projection's types (origin, tenant,
-- stream_id) in stream_version order, as of the snapshot snap (and what transaction me landed),
-- flagged replay: what a rebuild replays.
create function streamseal._projection_stream_events(h streamseal.handlers, origin text, tenant text, stream_id text,
                                                     snap pg_snapshot, me xid8)
returns setof streamseal.handler_event
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select row(x.event_id, x.origin, coalesce(x.origin_seq, n.origin_seq), coalesce(x.type_seq, n.type_seq), x.tenant,
               x.stream_id, x.stream_version, x.event_type, x.flags, x.payload, x.metadata, x.occurred_at, x.stored_at,
               true)::streamseal.handler_event
    from streamseal.events x
    -- An own event's numbers live in own_numbers (none yet while unstamped): a fenced probe
    -- by local_id, so the planner's guess about own_numbers never chooses the plan.
    left join lateral (
        select o.origin_seq, o.type_seq from streamseal.own_numbers o where o.local_id = x.local_id offset 0
    ) n on x.origin_seq is null
    where x.origin = _projection_stream_events.origin and x.stream_id = _projection_stream_events.stream_id
      and x.tenant = _projection_stream_events.tenant
      and x.event_type = any ((_projection_stream_events.h).event_types)
      and (x.landed_xid is null or x.landed_xid = _projection_stream_events.me
           or pg_catalog.pg_visible_in_snapshot(x.landed_xid, _projection_stream_events.snap))
    order by x.stream_version
$$;

-- _projection_stream_forget drops what a projection recorded of one stream (its cursors and held
-- events) before a rebuild replays it. Cursors by primary key, one per type (see
-- _projection_stream_top).
create function streamseal._projection_stream_forget(name text, event_types text[], origin text, tenant text, stream_id text)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    delete from streamseal.projection_cursors c
    using pg_catalog.unnest(_projection_stream_forget.event_types) t(event_type)
    where c.projection = _projection_stream_forget.name and c.origin = _projection_stream_forget.origin
      and c.tenant = _projection_stream_forget.tenant and c.event_type = t.event_type
      and c.stream_id = _projection_stream_forget.stream_id;
    delete from streamseal.projection_held c
    where c.projection = _projection_stream_forget.name and c.origin = _projection_stream_forget.origin
      and c.tenant = _projection_stream_forget.tenant and c.stream_id = _projection_stream_forget.stream_id;
$$;

-- _projection_stream_mark records in one stream's cursors the snapshot a rebuild replayed it
-- under and the transaction that ran it: the feed's later delivery of an event visible there is
-- skipped.
create function streamseal._projection_stream_mark(name text, event_types text[], origin text, tenant text, stream_id text,
                                                   snap pg_snapshot, me xid8)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    update streamseal.projection_cursors c set rebuilt_snapshot = _projection_stream_mark.snap, rebuilt_by = _projection_stream_mark.me
    from pg_catalog.unnest(_projection_stream_mark.event_types) t(event_type)
    where c.projection = _projection_stream_mark.name and c.origin = _projection_stream_mark.origin
      and c.tenant = _projection_stream_mark.tenant and c.event_type = t.event_type
      and c.stream_id = _projection_stream_mark.stream_id
$$;

-- _projection_rebuild_stream resets one stream of a projection through its reset hook and replays
-- the stream's events of the projection's types from the store in stream_version order, as of one
-- snapshot, recording it in the stream's cursors so the feed's later delivery of those events is
-- skipped; what the projection held of the stream is released (replayed in its place). Returns
-- how many events it replayed. The caller holds the handler's lock.
create function streamseal._projection_rebuild_stream(h streamseal.handlers, origin text, tenant text, stream_id text)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    snap pg_snapshot := pg_catalog.pg_current_snapshot();
    me xid8 := pg_catalog.pg_current_xact_id();
    e streamseal.handler_event;
    replayed bigint := 0;
begin
    execute pg_catalog.format('select %s($1, $2, $3)', (_projection_rebuild_stream.h).reset)
        using _projection_rebuild_stream.origin, _projection_rebuild_stream.tenant, _projection_rebuild_stream.stream_id;
    perform streamseal._projection_stream_forget((_projection_rebuild_stream.h).name, (_projection_rebuild_stream.h).event_types,
        _projection_rebuild_stream.origin,
        _projection_rebuild_stream.tenant, _projection_rebuild_stream.stream_id);
    for e in
        select * from streamseal._projection_stream_events(_projection_rebuild_stream.h, _projection_rebuild_stream.origin,
            _projection_rebuild_stream.tenant, _projection_rebuild_stream.stream_id, snap, me)
    loop
        perform streamseal._projection_apply((_projection_rebuild_stream.h).name, (_projection_rebuild_stream.h).handler,
            e, (_projection_rebuild_stream.h).event_types);
        replayed := replayed + 1;
    end loop;
    perform streamseal._projection_stream_mark((_projection_rebuild_stream.h).name, (_projection_rebuild_stream.h).event_types,
        _projection_rebuild_stream.origin,
        _projection_rebuild_stream.tenant, _projection_rebuild_stream.stream_id, snap, me);
    return replayed;
end
$$;

-- projection_rebuild_take takes the oldest rebuild the coverage audit requested of an application
-- projection (projection_rebuild_requests), in the caller's transaction, which must reset the
-- stream's state and apply projection_rebuild_replay's events before it commits (the request
-- goes with it; a rollback leaves it requested). No row: nothing requested. Refuses an
-- unregistered name (P0002) and a handler the control plane runs (22023).
create function streamseal.projection_rebuild_take(name text)
returns table (origin text, tenant text, stream_id text)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    h streamseal.handlers := streamseal._application_handler('projection_rebuild_take', projection_rebuild_take.name);
begin
    return query
    delete from streamseal.projection_rebuild_requests r
    where (r.projection, r.origin, r.tenant, r.stream_id) = (
        select q.projection, q.origin, q.tenant, q.stream_id from streamseal.projection_rebuild_requests q
        where q.projection = h.name
        order by q.requested_at, q.origin, q.tenant, q.stream_id
        limit 1)
    returning r.origin, r.tenant, r.stream_id;
end
$$;

-- projection_rebuild_replay is the store's half of an application projection's rebuild of one
-- stream, in the caller's transaction (after its reset, before its handler applies what this
-- returns): it forgets the stream's cursors and held events, returns the stream's events of the
-- projection's types in stream_version order (replay true) as of one snapshot, folds them into
-- the cursors as applied and records the snapshot, so the feed's later delivery of those events
-- is left out (feed_handler_advance). Refuses as projection_rebuild_take.
create function streamseal.projection_rebuild_replay(name text, origin text, tenant text, stream_id text)
returns setof streamseal.handler_event
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    h streamseal.handlers := streamseal._application_handler('projection_rebuild_replay', projection_rebuild_replay.name);
    snap pg_snapshot := pg_catalog.pg_current_snapshot();
    me xid8 := pg_catalog.pg_current_xact_id();
    evs streamseal.handler_event[];
begin
    if h.kind <> 'projection' then
        raise exception 'projection_rebuild_replay: % is a reactor: only a projection is rebuilt',
            pg_catalog.quote_literal(h.name) using errcode = '22023';
    end if;
    perform streamseal._projection_stream_forget(h.name, h.event_types, projection_rebuild_replay.origin, projection_rebuild_replay.tenant,
        projection_rebuild_replay.stream_id);
    evs := array(select e from streamseal._projection_stream_events(h, projection_rebuild_replay.origin,
        projection_rebuild_replay.tenant, projection_rebuild_replay.stream_id, snap, me) e);
    perform streamseal._projection_cursor_fold(h.name, evs);
    perform streamseal._projection_stream_mark(h.name, h.event_types, projection_rebuild_replay.origin, projection_rebuild_replay.tenant,
        projection_rebuild_replay.stream_id, snap, me);
    return query select * from pg_catalog.unnest(evs);
end
$$;

-- _projection_order_rebuilds rebuilds, in stream_version order, up to max streams a projection
-- holds events of (oldest held first; issue 19 item 2), so a late repair reaches the state in
-- order at once rather than at the next coverage audit: a SQL projection with a reset hook is
-- rebuilt here (one subtransaction a stream: a reset that raises leaves the stream held, for the
-- audit to report); an application projection that can reset is asked to
-- (projection_rebuild_requests; its subscriber performs it before reading on). Streams beyond
-- max, and projections that cannot reset, wait for the coverage audit (out_of_order). Returns
-- how many streams it rebuilt or requested. The caller holds the handler's lock.
create function streamseal._projection_order_rebuilds(h streamseal.handlers, max integer)
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    s record;
    done integer := 0;
begin
    if _projection_order_rebuilds.max < 1 or (_projection_order_rebuilds.h).kind <> 'projection'
       or not exists (select from streamseal.projection_held o where o.projection = (_projection_order_rebuilds.h).name) then
        return 0;
    end if;
    if (_projection_order_rebuilds.h).runs_in = 'application' then
        if not (_projection_order_rebuilds.h).application_reset then
            return 0;
        end if;
        insert into streamseal.projection_rebuild_requests (projection, origin, tenant, stream_id)
        select (_projection_order_rebuilds.h).name, o.origin, o.tenant, o.stream_id from streamseal.projection_held o
        where o.projection = (_projection_order_rebuilds.h).name
        group by o.origin, o.tenant, o.stream_id
        order by pg_catalog.min(o.held_at), o.origin, o.tenant, o.stream_id
        limit _projection_order_rebuilds.max
        on conflict do nothing;
        get diagnostics done = row_count;
        return done;
    end if;
    if (_projection_order_rebuilds.h).reset is null then
        return 0;
    end if;
    for s in
        select o.origin, o.tenant, o.stream_id from streamseal.projection_held o
        where o.projection = (_projection_order_rebuilds.h).name
          -- A stream waiting on a failing event is the failure's until its retry drains it.
          and not exists (select from streamseal.handler_failures w
                          where w.handler = o.projection and w.origin = o.origin and w.tenant = o.tenant
                            and w.stream_id = o.stream_id)
        group by o.origin, o.tenant, o.stream_id
        order by pg_catalog.min(o.held_at), o.origin, o.tenant, o.stream_id
        limit _projection_order_rebuilds.max
    loop
        begin
            perform streamseal._projection_rebuild_stream(_projection_order_rebuilds.h, s.origin, s.tenant, s.stream_id);
            done := done + 1;
        exception when others then
            null; -- the stream stays held: the coverage audit reports it (out_of_order)
        end;
    end loop;
    return done;
end
$$;

-- _handler_park records that a handler failed on ev (its stream waits from here) or, when the
-- stream waits already, parks ev behind the failing event.
create function streamseal._handler_park(name text, ev streamseal.handler_event, error text, sqlstate text,
                                         backoff_base interval)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    if _handler_park.error is not null then
        insert into streamseal.handler_failures (handler, origin, tenant, stream_id, event_id, error, sqlstate, next_attempt_at)
        values (_handler_park.name, (_handler_park.ev).origin, (_handler_park.ev).tenant, (_handler_park.ev).stream_id,
                (_handler_park.ev).event_id, _handler_park.error, _handler_park.sqlstate,
                pg_catalog.clock_timestamp() + _handler_park.backoff_base)
        on conflict do nothing;
    end if;
    insert into streamseal.handler_parked (handler, origin, tenant, stream_id, event_id, origin_seq)
    values (_handler_park.name, (_handler_park.ev).origin, (_handler_park.ev).tenant, (_handler_park.ev).stream_id,
            (_handler_park.ev).event_id, (_handler_park.ev).origin_seq);
end
$$;

-- run_handler is one step of a handler, in the caller's transaction (commit it: the handler's
-- writes, its cursors and its token move together, or none does):
--   1. retries the failed streams that are due: all of a stream's parked events in order, or none
--      (attempts and the next attempt move: backoff_base * 2^(attempts - 1), capped at
--      max_attempts doublings, and retried for ever at that pace);
--   2. reads up to max_events of the feed from its token and applies them: a reactor skips
--      state-only events; an event of a waiting stream is parked behind it; an event the handler
--      raises on starts its stream waiting (recorded in handler_failures) and the rest go on.
-- caught_up: the read found nothing (and nothing held back): the handler has everything the feed
-- had when this transaction started. out_of_order: events a projection held, not applied, as it had
-- applied a later version of their stream (projection_held; the coverage audit rebuilds the
-- stream in order); order_rebuilds: streams this run then rebuilt in version order, at most
-- max_order_rebuilds (_projection_order_rebuilds; the rest wait for the next run or the coverage
-- audit). Refuses an unregistered name (P0002) and a handler the application runs (22023: it
-- advances itself with feed_handler_advance).
create function streamseal.run_handler(name text, max_events integer default 500,
                                       backoff_base interval default '1 second', max_attempts integer default 12,
                                       max_order_rebuilds integer default 5)
returns table (read integer, applied integer, skipped integer, parked integer, failed integer, retried integer,
               caught_up boolean, out_of_order integer, order_rebuilds integer)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    h streamseal.handlers;
    evs streamseal.handler_event[];
    ev streamseal.handler_event;
    next_token text;
    held bigint;
    f record;
    p record;
    any_waiting boolean;
    msg text;
    state text;
    n_applied integer := 0;
    n_skipped integer := 0;
    n_parked integer := 0;
    n_failed integer := 0;
    n_retried integer := 0;
    n_held integer := 0;
    fast_done boolean := false;
begin
    perform streamseal._require_backoff('run_handler', run_handler.backoff_base, run_handler.max_attempts);
    if run_handler.max_events is null or run_handler.max_events < 1 or run_handler.max_events > 10000 then
        raise exception 'run_handler: max_events % is invalid: expected 1 to 10000',
            coalesce(run_handler.max_events::text, 'null') using errcode = '22023';
    end if;
    if run_handler.max_order_rebuilds is null or run_handler.max_order_rebuilds < 0 then
        raise exception 'run_handler: max_order_rebuilds % is invalid: expected 0 or more',
            coalesce(run_handler.max_order_rebuilds::text, 'null') using errcode = '22023';
    end if;
    perform pg_catalog.pg_advisory_xact_lock(streamseal._handler_lock_key(run_handler.name));
    select * into h from streamseal.handlers x where x.name = run_handler.name;
    if not found then
        raise exception 'run_handler: no handler % is registered', pg_catalog.quote_literal(run_handler.name)
            using errcode = 'P0002';
    end if;
    if h.runs_in <> 'control_plane' then
        raise exception 'run_handler: % is run by the application (feed_handler_advance), not by streamseal run',
            pg_catalog.quote_literal(run_handler.name) using errcode = '22023';
    end if;

    -- 1. Due retries: a stream's parked events all apply, or the stream keeps waiting.
    for f in
        select x.origin, x.tenant, x.stream_id, x.attempts from streamseal.handler_failures x
        where x.handler = h.name and x.next_attempt_at <= pg_catalog.clock_timestamp()
        order by x.next_attempt_at
        limit 100
    loop
        begin
            for p in
                select e.event_id, e.origin, k.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version,
                       e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
                from streamseal.handler_parked k
                join streamseal.events e on e.event_id = k.event_id
                where k.handler = h.name and k.origin = f.origin and k.tenant = f.tenant and k.stream_id = f.stream_id
                order by k.park_seq
            loop
                if streamseal._handler_apply(h, row(p.event_id, p.origin, p.origin_seq, p.type_seq, p.tenant, p.stream_id,
                        p.stream_version, p.event_type, p.flags, p.payload, p.metadata, p.occurred_at, p.stored_at,
                        false)::streamseal.handler_event) then
                    n_applied := n_applied + 1;
                end if;
            end loop;
            delete from streamseal.handler_failures x
            where x.handler = h.name and x.origin = f.origin and x.tenant = f.tenant and x.stream_id = f.stream_id;
            n_retried := n_retried + 1;
        exception when others then
            get stacked diagnostics msg = message_text, state = returned_sqlstate;
            update streamseal.handler_failures x
            set attempts = x.attempts + 1, error = msg, sqlstate = state, last_failed_at = pg_catalog.clock_timestamp(),
                next_attempt_at = pg_catalog.clock_timestamp()
                    + streamseal._repair_backoff(run_handler.backoff_base, x.attempts + 1, run_handler.max_attempts)
            where x.handler = h.name and x.origin = f.origin and x.tenant = f.tenant and x.stream_id = f.stream_id;
        end;
    end loop;

    -- 2. The feed, from the handler's token.
    select pg_catalog.array_agg(row(r.event_id, r.origin, r.origin_seq, r.type_seq, r.tenant, r.stream_id, r.stream_version,
                                    r.event_type, r.flags, r.payload, r.metadata, r.occurred_at, r.stored_at,
                                    false)::streamseal.handler_event order by r.ordinality)
               filter (where r.event_id is not null),
           pg_catalog.max(r.next_token), pg_catalog.max(r.held_copies)
    into evs, next_token, held
    from streamseal.read_feed(h.event_types, h.tenants, h.token, run_handler.max_events) with ordinality r;
    evs := coalesce(evs, '{}');

    any_waiting := exists (select from streamseal.handler_failures x where x.handler = h.name);
    -- Fast path: the whole batch in one subtransaction; a raise sends it to the slow path, event
    -- by event (one subtransaction each), so only the failing stream waits.
    if not any_waiting and pg_catalog.cardinality(evs) > 0 then
        begin
            select b.applied, b.skipped, b.held into n_applied, n_skipped, n_held from streamseal._handler_apply_batch(h, evs) b;
            fast_done := true;
        exception when others then
            n_applied := 0;
            n_skipped := 0;
            n_held := 0;
        end;
    end if;
    if not fast_done then
        foreach ev in array evs loop
            if h.kind = 'reactor' and ev.flags & 4 <> 0 then
                n_skipped := n_skipped + 1;
                continue;
            end if;
            if exists (select from streamseal.handler_failures x
                       where x.handler = h.name and x.origin = ev.origin and x.tenant = ev.tenant and x.stream_id = ev.stream_id) then
                perform streamseal._handler_park(h.name, ev, null, null, run_handler.backoff_base);
                n_parked := n_parked + 1;
                continue;
            end if;
            begin
                if streamseal._handler_apply(h, ev) then
                    n_applied := n_applied + 1;
                end if;
            exception when others then
                get stacked diagnostics msg = message_text, state = returned_sqlstate;
                perform streamseal._handler_park(h.name, ev, msg, state, run_handler.backoff_base);
                n_failed := n_failed + 1;
            end;
        end loop;
    end if;

    update streamseal.handlers x
    set token = next_token, applied = x.applied + n_applied, last_run_at = pg_catalog.now(), run_error = null,
        run_error_at = null,
        caught_up_at = case when pg_catalog.cardinality(evs) = 0 and coalesce(held, 0) = 0
                            then pg_catalog.now() else x.caught_up_at end
    where x.name = h.name;
    if not fast_done and h.kind = 'projection' then
        -- The slow path held event by event (_projection_apply): count what this run held.
        select pg_catalog.count(*) into n_held from streamseal.projection_held x
        where x.projection = h.name and x.event_id = any (array(select u.event_id from pg_catalog.unnest(evs) u));
    end if;
    return query select pg_catalog.cardinality(evs), n_applied, n_skipped, n_parked, n_failed, n_retried,
        pg_catalog.cardinality(evs) = 0 and coalesce(held, 0) = 0, n_held,
        streamseal._projection_order_rebuilds(h, run_handler.max_order_rebuilds);
end
$$;

-- _coverage_gap: one bucket whose projection cursor does not match the store's fold.
create type streamseal._coverage_gap as (
    projection text, origin text, tenant text, event_type text, stream_id text, kind text, store_n bigint,
    cursor_n bigint
);

-- _coverage_stream: what one audit does about one stream of a projection.
create type streamseal._coverage_stream as (
    projection text, origin text, tenant text, stream_id text, action text, stream_order bigint, runs_in text
);

-- coverage_audit is the local coverage audit (Phase L): per (projection, bucket) of its scope, the
-- cursor's fold must equal the store's (stream_digests: count and the two XORs). Judged only for
-- projections that have caught up, and buckets that last moved at least settle before that (an
-- event still on its way is not a gap). Kinds: out_of_order (the projection holds events of the
-- bucket that landed below a version of their stream it had applied: projection_held), born_late
-- (no cursor, the projection started after this history: from_start false), missing (no cursor),
-- short (fewer applied), differs (as many or more, another fold). A stream waiting on a failure
-- is the failure's, not a gap. Projections the application runs (register_feed_projection) are
-- judged alike. Remediation per stream (origin, tenant, stream_id), oldest finding first: at most
-- max_rebuilds streams are rebuilt (_projection_rebuild_stream) or, for an application
-- projection, requested of it (projection_rebuild_requests, NOTIFY streamseal_handlers; its
-- subscriber resets and replays the stream), or in report-only recorded as would_rebuild; a
-- projection that cannot reset a stream is reported (no_reset_hook); the rest are deferred to
-- later audits. At most max_reports findings are recorded per audit; every gap is counted. Findings of
-- buckets now covered are deleted (healed).
create function streamseal.coverage_audit(max_reports integer, max_rebuilds integer, report_only boolean,
                                          settle interval default '0')
returns table (gaps bigint, reported bigint, rebuilt bigint, would_rebuild bigint, deferred bigint, replayed bigint,
               requested bigint)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    found_gaps streamseal._coverage_gap[];
    plan streamseal._coverage_stream[];
    step record;
    h streamseal.handlers;
    n_rebuilt bigint := 0;
    n_would bigint := 0;
    n_replayed bigint := 0;
begin
    if coverage_audit.max_reports is null or coverage_audit.max_reports < 0 then
        raise exception 'coverage_audit: max_reports % is invalid: expected 0 or more',
            coalesce(coverage_audit.max_reports::text, 'null') using errcode = '22023';
    end if;
    if coverage_audit.max_rebuilds is null or coverage_audit.max_rebuilds < 0 then
        raise exception 'coverage_audit: max_rebuilds % is invalid: expected 0 or more',
            coalesce(coverage_audit.max_rebuilds::text, 'null') using errcode = '22023';
    end if;
    if coverage_audit.settle is null or coverage_audit.settle < interval '0' then
        raise exception 'coverage_audit: settle % is invalid: expected 0 or a positive interval',
            coalesce(coverage_audit.settle::text, 'null') using errcode = '22023';
    end if;
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('streamseal.coverage_audit', 0));

    select pg_catalog.array_agg(row(x.projection, x.origin, x.tenant, x.event_type, x.stream_id, x.kind, x.store_n,
                                    x.cursor_n)::streamseal._coverage_gap)
    into found_gaps
    from (
        select p.name as projection, d.origin, d.tenant, d.event_type, d.stream_id,
               case when exists (select from streamseal.projection_held o
                                 where o.projection = p.name and o.origin = d.origin and o.tenant = d.tenant
                                   and o.stream_id = d.stream_id and o.event_type = d.event_type) then 'out_of_order'
                    when c.projection is null and p.born_late then 'born_late'
                    when c.projection is null then 'missing'
                    when c.n < d.n then 'short'
                    else 'differs' end as kind,
               d.n as store_n, coalesce(c.n, 0) as cursor_n,
               coalesce(f.first_found_at, pg_catalog.now()) as first_found_at
        from streamseal.handlers p
        join streamseal.stream_digests d
          on d.event_type = any (p.event_types) and (p.tenants is null or d.tenant = any (p.tenants))
        left join streamseal.projection_cursors c
          on c.projection = p.name and c.origin = d.origin and c.tenant = d.tenant and c.event_type = d.event_type
         and c.stream_id = d.stream_id
        left join streamseal.coverage_findings f
          on f.projection = p.name and f.origin = d.origin and f.tenant = d.tenant and f.event_type = d.event_type
         and f.stream_id = d.stream_id
        where p.kind = 'projection' and p.caught_up_at is not null
          and d.updated_at <= p.caught_up_at - coverage_audit.settle
          and (case when c.projection is null then d.n > 0
                    else (c.n, c.x0, c.x1) is distinct from (d.n, d.x0, d.x1) end)
          and not exists (select from streamseal.handler_failures w
                          where w.handler = p.name and w.origin = d.origin and w.tenant = d.tenant and w.stream_id = d.stream_id)
    ) x;
    found_gaps := coalesce(found_gaps, '{}');

    -- Findings of buckets that are no gap any more: healed.
    delete from streamseal.coverage_findings f
    where not exists (select from pg_catalog.unnest(found_gaps) g
                      where g.projection = f.projection and g.origin = f.origin and g.tenant = f.tenant
                        and g.event_type = f.event_type and g.stream_id = f.stream_id);

    -- Streams in remediation order: the oldest finding first, so deferred streams progress.
    select pg_catalog.array_agg(row(s.projection, s.origin, s.tenant, s.stream_id,
           case when not s.resettable then 'no_reset_hook'
                when s.fix_order <= coverage_audit.max_rebuilds and coverage_audit.report_only then 'would_rebuild'
                when s.fix_order <= coverage_audit.max_rebuilds and s.runs_in = 'application' then 'requested'
                when s.fix_order <= coverage_audit.max_rebuilds then 'rebuilt'
                else 'deferred' end,
           s.stream_order, s.runs_in)::streamseal._coverage_stream order by s.stream_order)
    into plan
    from (
        select t.*, pg_catalog.row_number() over (order by (not t.resettable), t.first_found_at, t.projection, t.origin, t.stream_id) as fix_order,
               pg_catalog.row_number() over (order by t.first_found_at, t.projection, t.origin, t.stream_id) as stream_order
        from (
            select g.projection, g.origin, g.tenant, g.stream_id, hh.runs_in,
                   (hh.reset is not null or hh.application_reset) as resettable,
                   pg_catalog.min(coalesce(f.first_found_at, pg_catalog.now())) as first_found_at
            from pg_catalog.unnest(found_gaps) g
            join streamseal.handlers hh on hh.name = g.projection
            left join streamseal.coverage_findings f
              on f.projection = g.projection and f.origin = g.origin and f.tenant = g.tenant
             and f.event_type = g.event_type and f.stream_id = g.stream_id
            group by g.projection, g.origin, g.tenant, g.stream_id, hh.runs_in, hh.reset, hh.application_reset
        ) t
    ) s;
    plan := coalesce(plan, '{}');

    for step in select * from pg_catalog.unnest(plan) c where c.action = 'rebuilt' order by c.stream_order loop
        select * into h from streamseal.handlers x where x.name = step.projection;
        perform pg_catalog.pg_advisory_xact_lock(streamseal._handler_lock_key(h.name));
        n_replayed := n_replayed + streamseal._projection_rebuild_stream(h, step.origin, step.tenant, step.stream_id);
        n_rebuilt := n_rebuilt + 1;
    end loop;
    select pg_catalog.count(*) into n_would from pg_catalog.unnest(plan) c where c.action = 'would_rebuild';
    -- An application projection resets its own state: ask it (its subscriber listens).
    insert into streamseal.projection_rebuild_requests (projection, origin, tenant, stream_id)
    select c.projection, c.origin, c.tenant, c.stream_id from pg_catalog.unnest(plan) c where c.action = 'requested'
    on conflict do nothing;
    perform pg_catalog.pg_notify('streamseal_handlers', c.projection)
    from (select distinct x.projection from pg_catalog.unnest(plan) x where x.action = 'requested') c;

    -- Findings this audit does not record again stay (their first_found_at orders remediation)
    -- as deferred; then up to max_reports findings are recorded, the streams acted on first.
    update streamseal.coverage_findings f set action = 'deferred' where f.action <> 'deferred';
    -- Record up to max_reports findings: the streams acted on first.
    insert into streamseal.coverage_findings as f (projection, origin, tenant, event_type, stream_id, kind, store_n,
                                                   cursor_n, action)
    select g.projection, g.origin, g.tenant, g.event_type, g.stream_id, g.kind, g.store_n, g.cursor_n, c.action
    from pg_catalog.unnest(found_gaps) g
    join pg_catalog.unnest(plan) c on c.projection = g.projection and c.origin = g.origin and c.tenant = g.tenant
     and c.stream_id = g.stream_id
    order by (c.action = 'deferred'), c.stream_order, g.event_type
    limit coverage_audit.max_reports
    on conflict (projection, origin, tenant, event_type, stream_id) do update
        set kind = excluded.kind, store_n = excluded.store_n, cursor_n = excluded.cursor_n, action = excluded.action,
            audits = f.audits + 1, last_found_at = pg_catalog.now();

    return query select pg_catalog.cardinality(found_gaps)::bigint,
        least(pg_catalog.cardinality(found_gaps), coverage_audit.max_reports)::bigint, n_rebuilt, n_would,
        (select pg_catalog.count(*) from pg_catalog.unnest(plan) c where c.action = 'deferred'), n_replayed,
        (select pg_catalog.count(*) from pg_catalog.unnest(plan) c where c.action = 'requested');
end
$$;
