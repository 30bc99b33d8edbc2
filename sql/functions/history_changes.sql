-- history_changes: deliberate changes of this service's sealed history (an own stamped counted
-- event removed, or its fold bits changed by reclassification) recorded as facts that travel. The
-- write-path triggers (event_triggers.sql) record them; the manifest answer (controlplane/audit)
-- carries them with history_changes_page; a consumer applies them once with apply_history_changes.

-- _history_changing is called by a write-path trigger about to record changes of own sealed
-- history: it starts a new origin generation (once per statement; any change of a stamped own
-- counted event bumps, closed epoch or not, so a consumer's seal never stands over changed
-- history) and returns it. The bump row-locks origin_generation until commit, and the trigger
-- takes its change ids only after it: recorders are serialized to commit, so a change id never
-- commits after a higher one, and a reader's cursor can never pass a change that commits later
-- (an identity value is handed out at insert, not at commit; this lock is what orders them).
create function streamseal._history_changing()
returns bigint
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$ select streamseal._bump_origin_generation() $$;

-- history_changes_page returns, for a manifest answer, this origin's changes with change_id above
-- after: at most max_changes of them scanned in id order, of which only the changes of the
-- (tenant, type) pairs requester is granted are listed (invariant 11, streamseal._granted). through is the highest id scanned
-- (the requester's next cursor, so changes it may not see never hold it back); more says
-- changes remain above through.
create function streamseal.history_changes_page(after bigint, requester text, max_changes integer)
returns table (through bigint, more boolean, changes jsonb)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
    if history_changes_page.after is null or history_changes_page.after < 0 then
        raise exception 'history_changes_page: cursor % is invalid: expected a non-negative change id', history_changes_page.after
            using errcode = '22023';
    end if;
    if history_changes_page.max_changes is null or history_changes_page.max_changes < 1 then
        raise exception 'history_changes_page: max_changes % is invalid: expected a positive page size', history_changes_page.max_changes
            using errcode = '22023';
    end if;
    return query
    with scanned as (
        select h.*, pg_catalog.row_number() over (order by h.change_id) as position
        from streamseal.history_changes h
        where h.change_id > history_changes_page.after
        order by h.change_id
        limit history_changes_page.max_changes + 1
    ), page as (
        select s.* from scanned s where s.position <= history_changes_page.max_changes
    )
    select coalesce((select pg_catalog.max(p.change_id) from page p), history_changes_page.after),
           (select pg_catalog.count(*) from scanned) > history_changes_page.max_changes,
           coalesce((select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                        'change_id', p.change_id, 'kind', p.kind, 'event_id', p.event_id,
                        'tenant', p.tenant, 'event_type', p.event_type, 'stream_id', p.stream_id,
                        'origin_seq', p.origin_seq, 'flags', p.flags) order by p.change_id)
                     from page p
                     where streamseal._granted(history_changes_page.requester, p.tenant, p.event_type)), '[]'::jsonb);
end
$$;

-- _announced_changes reads a JSON array of announced changes as rows (unknown keys ignored).
create function streamseal._announced_changes(changes jsonb)
returns table (change_id bigint, kind text, event_id uuid, flags integer)
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select c.change_id, c.kind, c.event_id, c.flags
    from pg_catalog.jsonb_to_recordset(coalesce(_announced_changes.changes, '[]')) as c(change_id bigint, kind text, event_id uuid, flags integer)
$$;

-- apply_history_changes applies an origin's announced changes (a JSON array of {change_id, kind,
-- event_id, flags, ...}, as a manifest answer carries them) to this store's copies of that
-- origin, each once: a removed event's copy is deleted, a reclassified one takes the origin's
-- fold bits (1 ephemeral, 2 at-most-once; the copy's own state-only bit stays). Only copies the origin named, by event id and origin, are touched (invariant 10: this
-- replicates announced facts, it never deletes a divergence). The write-path triggers keep the
-- digests and closed epochs exact (invariant 4). The cursor moves to through (the highest id the
-- origin scanned) or the highest id applied. Returns how many copies changed.
create function streamseal.apply_history_changes(origin text, changes jsonb, through bigint)
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    cursor_at bigint;
    bad record;
    removed bigint;
    reclassified bigint;
begin
    if apply_history_changes.origin is null or apply_history_changes.origin = streamseal.service_name() then
        raise exception 'apply_history_changes: origin % is invalid: expected another service',
            coalesce(pg_catalog.quote_literal(apply_history_changes.origin), 'null')
            using errcode = '22023';
    end if;
    if apply_history_changes.through is null or apply_history_changes.through < 0 then
        raise exception 'apply_history_changes: cursor % of origin "%" is invalid: expected a non-negative change id',
            apply_history_changes.through, apply_history_changes.origin
            using errcode = '22023';
    end if;
    if pg_catalog.jsonb_typeof(coalesce(apply_history_changes.changes, '[]')) <> 'array' then
        raise exception 'apply_history_changes: changes of origin "%" are invalid: expected a JSON array', apply_history_changes.origin
            using errcode = '22023';
    end if;

    -- GUARD: refuse the whole batch on any malformed change, so nothing is half applied.
    select a.* into bad from streamseal._announced_changes(apply_history_changes.changes) a
    where a.change_id is null or a.change_id < 1 or a.event_id is null
       or a.kind is null or a.kind not in ('removed', 'reclassified')
       or (a.kind = 'reclassified' and (a.flags is null or a.flags & ~7 <> 0))
    limit 1;
    if found then
        raise exception 'apply_history_changes: change % of origin "%" (kind %, event %, flags %) is invalid: expected a positive change_id, an event_id, kind removed or reclassified, and known flags',
            bad.change_id, apply_history_changes.origin, coalesce(bad.kind, 'null'), coalesce(bad.event_id::text, 'null'), coalesce(bad.flags::text, 'null')
            using errcode = '22023';
    end if;

    insert into streamseal.copy_history_cursors (origin, applied_through)
    values (apply_history_changes.origin, 0)
    on conflict on constraint copy_history_cursors_pkey do nothing;
    select k.applied_through into cursor_at from streamseal.copy_history_cursors k
    where k.origin = apply_history_changes.origin for update;

    -- The latest unapplied change of each event decides what its copy becomes.
    delete from streamseal.events e
    using (select distinct on (a.event_id) a.event_id, a.kind from streamseal._announced_changes(apply_history_changes.changes) a
           where a.change_id > cursor_at order by a.event_id, a.change_id desc) latest
    where latest.kind = 'removed' and e.origin = apply_history_changes.origin and e.event_id = latest.event_id;
    get diagnostics removed = row_count;

    update streamseal.events e
    set flags = (e.flags & ~3) | (latest.flags & 3)
    from (select distinct on (a.event_id) a.event_id, a.kind, a.flags from streamseal._announced_changes(apply_history_changes.changes) a
          where a.change_id > cursor_at order by a.event_id, a.change_id desc) latest
    where latest.kind = 'reclassified' and e.origin = apply_history_changes.origin and e.event_id = latest.event_id
      and e.flags & 3 <> latest.flags & 3;
    get diagnostics reclassified = row_count;

    update streamseal.copy_history_cursors k
    set applied_through = greatest(k.applied_through, apply_history_changes.through,
                                   coalesce((select pg_catalog.max(a.change_id) from streamseal._announced_changes(apply_history_changes.changes) a), 0)),
        applied_at = pg_catalog.now()
    where k.origin = apply_history_changes.origin;
    return removed + reclassified;
end
$$;

-- copy_history_cursor returns the highest change id of origin applied to this store's copies
-- (0 when none): the cursor a manifest request carries.
create function streamseal.copy_history_cursor(origin text)
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce((select k.applied_through from streamseal.copy_history_cursors k
                     where k.origin = copy_history_cursor.origin), 0)
$$;
