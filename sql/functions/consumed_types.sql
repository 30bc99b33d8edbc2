-- consumed_types.sql: the consumed-type registry (DESIGN.md "Consumed types", the proposal's
-- Phase S). The control plane reconciles it with the subscriptions at start and whenever they
-- change (the inbox's reconcile); the backfill loop sends one broadcast state-only request per
-- expansion and the repair receiver records each origin's answers; the audit asks
-- _pending_backfill whether missing history is expected (older than the lane's birth).

-- consumed_types_reconcile brings the registry in line with the subscriptions and returns what
-- changed: 'baseline' (the first start records everything consumed then: nothing existed to
-- miss), 'expansion' (a type consumed later: pending, born now, with each known origin's
-- checkpoint window end as its birth position), 'dropped' (no subscription consumes it any more:
-- consuming it again is a new expansion). at_start says the caller is a control plane starting:
-- only a start may take the baseline, so a `subscribe` before the first start is baseline too,
-- and a registry never baselined reports nothing until then.
create function streamseal.consumed_types_reconcile(at_start boolean)
returns table (event_type text, change text)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    positions jsonb;
begin
    -- One reconcile at a time: replicas and the inbox may race at start.
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('streamseal.consumed_types_reconcile'));
    if not exists (select from streamseal.consumption_baseline) then
        if not consumed_types_reconcile.at_start then
            return;
        end if;
        insert into streamseal.consumption_baseline default values;
        return query
        insert into streamseal.consumed_types (event_type, status)
        select distinct s.event_type, 'baseline' from streamseal.subscriptions s
        on conflict (event_type) do nothing
        returning consumed_types.event_type, 'baseline'::text;
        return;
    end if;
    return query
    delete from streamseal.consumed_types c
    where not exists (select from streamseal.subscriptions s where s.event_type = c.event_type)
    returning c.event_type, 'dropped'::text;
    select coalesce(pg_catalog.jsonb_object_agg(k.origin, k.last_window_to), '{}') into positions
    from streamseal.known_origins k;
    return query
    insert into streamseal.consumed_types (event_type, status, birth_positions)
    select distinct s.event_type, 'pending', positions from streamseal.subscriptions s
    on conflict (event_type) do nothing
    returning consumed_types.event_type, 'expansion'::text;
end
$$;

-- backfill_due returns the expansions to ask for now: every pending type, and every requested
-- one whose broadcast went unanswered by every origin for reask_after (a request lost on the way
-- is asked again: a sticky "requested" mark with no deadline turns one lost request into
-- permanent loss). Ephemeral-only history is not selected by the origin (select_backfill).
create function streamseal.backfill_due(reask_after interval)
returns setof text
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select c.event_type from streamseal.consumed_types c
    where c.status = 'pending'
       or (c.status = 'requested' and c.requested_at < pg_catalog.now() - backfill_due.reask_after
           and not exists (select from streamseal.broadcast_answers a where a.backfill = c.backfill_request))
    order by 1
$$;

-- backfill_claim marks every type due (as backfill_due says) requested by request_id and returns
-- them, atomically: of several control-plane replicas reconciling at once, one claims a type and
-- sends its broadcast; the others find it requested (the conditions are on the row itself, so a
-- replica that waited for another's update re-checks them against the updated row).
create function streamseal.backfill_claim(reask_after interval, request_id uuid)
returns setof text
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    update streamseal.consumed_types c
    set status = 'requested', backfill_request = backfill_claim.request_id, requested_at = pg_catalog.now(),
        completed_at = null
    where c.status = 'pending'
       or (c.status = 'requested' and c.requested_at < pg_catalog.now() - backfill_claim.reask_after
           and not exists (select from streamseal.broadcast_answers a where a.backfill = c.backfill_request))
    returning c.event_type
$$;

-- backfill_reask_stalled claims the backfill answers that stalled and returns the follow-up to
-- send again for each: an origin answered a backfill of a type still requested, truncated, and
-- its last follow-up (the latest not answered) brought no summary for reask_after: lost on the
-- way, or never reached the origin. The follow-up keeps its request_id and body as recorded, so an
-- origin that did get it serves it once (it keeps a request id once). Backoff without a counter:
-- a re-ask moves the follow-up's sent_at (when it was last sent), and the next is due once it has
-- waited as long as it had since the answer's last progress (broadcast_answers.updated_at), at
-- least reask_after and at most 16 times that: re-asks at reask_after x 1, 2, 4, 8, 16, 16, ...
-- Claimed atomically (the conditions are on the updated row): of several replicas one sends it.
-- An answer whose last summary is not followed yet is the receiver's to follow, not this.
create function streamseal.backfill_reask_stalled(reask_after interval)
returns table (request_id uuid, origin text, request jsonb)
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    update streamseal.sent_requests s
    set sent_at = pg_catalog.now()
    from streamseal.broadcast_answers a
    cross join lateral (
        select l.request_id from streamseal.sent_requests l
        where l.backfill = a.backfill and l.origin = a.origin and l.source = 'follow_up' and l.answered_at is null
        order by l.sent_at desc, l.request_id
        limit 1) f
    where not a.done
      and exists (select from streamseal.consumed_types c where c.backfill_request = a.backfill and c.status = 'requested')
      and s.request_id = f.request_id and s.answered_at is null
      and pg_catalog.now() - s.sent_at >= least(
              greatest(backfill_reask_stalled.reask_after, s.sent_at - a.updated_at),
              16 * backfill_reask_stalled.reask_after)
    returning s.request_id, s.origin, s.request
$$;

-- backfill_requested records that request_id (a broadcast, sent_requests origin '_all') asks
-- for event_types' history: they become requested. A type not consumed is refused by name.
create function streamseal.backfill_requested(event_types text[], request_id uuid)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    problem text := streamseal._list_problem(backfill_requested.event_types);
    unknown text;
begin
    if problem is not null then
        raise exception 'backfill_requested: a backfill must name its event types: %', problem using errcode = '22023';
    end if;
    select t.name into unknown
    from pg_catalog.unnest(backfill_requested.event_types) as t(name)
    where not exists (select from streamseal.consumed_types c where c.event_type = t.name)
    limit 1;
    if found then
        raise exception 'backfill: event type % is not consumed by this service: subscribe to it first (a backfill fills what a service consumes)',
            pg_catalog.quote_literal(unknown) using errcode = '22023';
    end if;
    update streamseal.consumed_types c
    set status = 'requested', backfill_request = backfill_requested.request_id, requested_at = pg_catalog.now(),
        completed_at = null
    where c.event_type = any (backfill_requested.event_types);
end
$$;

-- backfill_answered records one origin's summary of a backfill's request (the broadcast itself
-- or a follow-up of its truncated answer): events shipped, and done when not truncated. A type
-- of the backfill completes once every origin that answered is done and every known origin has
-- answered. total, when the origin stated it (its answer to the broadcast), is what its whole
-- answer holds: the first stated total is kept (progress is shipped over it; a negative one is
-- not a total and is ignored). Returns the
-- backfill the request belongs to (null: not a backfill's).
create function streamseal.backfill_answered(request_id uuid, origin text, shipped bigint, truncated boolean,
                                             total bigint default null)
returns uuid
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    root uuid;
begin
    select s.backfill into root from streamseal.sent_requests s where s.request_id = backfill_answered.request_id;
    if root is null then
        return null;
    end if;
    insert into streamseal.broadcast_answers as a (backfill, origin, shipped, done, total)
    values (root, backfill_answered.origin, backfill_answered.shipped, not backfill_answered.truncated,
            case when backfill_answered.total >= 0 then backfill_answered.total end)
    on conflict on constraint broadcast_answers_pkey do update
    set shipped = a.shipped + excluded.shipped, done = excluded.done, updated_at = pg_catalog.now(),
        total = coalesce(a.total, excluded.total);
    update streamseal.consumed_types c set status = 'complete', completed_at = pg_catalog.now()
    where c.backfill_request = root and c.status = 'requested'
      and not exists (select from streamseal.broadcast_answers a where a.backfill = root and not a.done)
      and not exists (
          select from streamseal.known_origins k
          where not exists (select from streamseal.broadcast_answers a where a.backfill = root and a.origin = k.origin));
    return root;
end
$$;

-- _pending_backfill says whether a deficit of (origin, tenant, event_type) is expected history:
-- the type is an expansion whose backfill has not landed (pending or requested), and the lane
-- holds no hole after its birth (suspected, confirmed or requested type_seqs above birth_floor:
-- those are losses the checkpoints named, and stay a deficit). The audit labels such a deficit
-- 'pending_backfill': informational, never ledgered, never divergence.
create function streamseal._pending_backfill(origin text, tenant text, event_type text)
returns boolean
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select exists (
        select from streamseal.consumed_types c
        where c.event_type = _pending_backfill.event_type and c.status in ('pending', 'requested'))
       and not exists (
        select from streamseal.lanes l
        where l.origin = _pending_backfill.origin and l.tenant = _pending_backfill.tenant
          and l.event_type = _pending_backfill.event_type
          and not pg_catalog.isempty(l.suspected + l.confirmed + l.requested))
$$;

-- _birth_lineage relabels a comparison's reason for (origin, tenant, event_type): a 'deficit'
-- that _pending_backfill explains is 'pending_backfill'; every other reason passes unchanged.
create function streamseal._birth_lineage(origin text, tenant text, event_type text, reason text)
returns text
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select case
        when _birth_lineage.reason = 'deficit'
         and streamseal._pending_backfill(_birth_lineage.origin, _birth_lineage.tenant, _birth_lineage.event_type)
        then 'pending_backfill'
        else _birth_lineage.reason
    end
$$;

-- backfill_include_at_most_once sets the per-type opt-in of at-most-once occurrences in
-- backfills (include: opt in; false: opt out) and returns how many types changed. Off by default:
-- an at-most-once occurrence is never selected for a backfill unless its type opted in here
-- (the origins select them state-only, so no side effect fires); ephemeral events never are.
-- An operator (or the control role) runs it, before or after subscribing; it applies to the
-- backfills sent from then on. A type need not be consumed yet, so an opt-in can precede the
-- subscription that expands to it.
create function streamseal.backfill_include_at_most_once(event_types text[], include boolean)
returns integer
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    problem text := streamseal._list_problem(backfill_include_at_most_once.event_types);
    changed integer;
begin
    if problem is not null then
        raise exception 'backfill_include_at_most_once: the opt-in must name its event types: %', problem using errcode = '22023';
    end if;
    if backfill_include_at_most_once.include is null then
        raise exception 'backfill_include_at_most_once: include is null: expected true (opt in) or false (opt out)' using errcode = '22023';
    end if;
    if backfill_include_at_most_once.include then
        insert into streamseal.backfill_at_most_once (event_type)
        select distinct t.name from pg_catalog.unnest(backfill_include_at_most_once.event_types) t(name)
        on conflict (event_type) do nothing;
    else
        delete from streamseal.backfill_at_most_once a where a.event_type = any (backfill_include_at_most_once.event_types);
    end if;
    get diagnostics changed = row_count;
    return changed;
end
$$;

-- backfill_at_most_once_types returns which of event_types opted in to at-most-once occurrences
-- in backfills (backfill_include_at_most_once): what a backfill request asks the origins for.
create function streamseal.backfill_at_most_once_types(event_types text[])
returns text[]
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(pg_catalog.array_agg(a.event_type order by a.event_type), '{}')
    from streamseal.backfill_at_most_once a
    where a.event_type = any (backfill_at_most_once_types.event_types)
$$;
