-- quarantine: own events the relay could not publish, set aside with their reason so the events
-- behind them flow (invariant 13). The relay quarantines and releases; an operator lists and
-- re-queues (`streamseal quarantine list|requeue`). The relay's cursor passes a quarantined event,
-- so checkpoints count it as emitted: consumers see its type_seq as a hole and name it.

-- quarantine_event sets one stamped own event aside with the reason (a second call updates the
-- reason and clears a pending re-queue).
create function streamseal.quarantine_event(event_id uuid, stage text, reason text)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    seq bigint;
begin
    if quarantine_event.stage is distinct from 'relay' then
        raise exception 'quarantine_event: stage % is unknown: expected relay', coalesce(quarantine_event.stage, 'null')
            using errcode = '22023';
    end if;
    if coalesce(quarantine_event.reason, '') = '' then
        raise exception 'quarantine_event: a reason is required' using errcode = '22023';
    end if;
    -- An own event's number is in own_numbers (issue 16), keyed by its row's local_id.
    select n.origin_seq into seq
    from streamseal.events e
    join streamseal.own_numbers n on n.local_id = e.local_id
    where e.event_id = quarantine_event.event_id and n.origin = streamseal.service_name();
    if seq is null then
        raise exception 'quarantine_event: event % is not a stamped own event of this service', quarantine_event.event_id
            using errcode = '22023';
    end if;
    insert into streamseal.quarantine as q (event_id, origin_seq, stage, reason)
    values (quarantine_event.event_id, seq, quarantine_event.stage, quarantine_event.reason)
    on conflict on constraint quarantine_pkey do update
    set reason = excluded.reason, stage = excluded.stage, quarantined_at = pg_catalog.now(), requeued_at = null;
end
$$;

-- quarantine_requeue marks quarantined events for the relay to publish again: the ids given, or
-- every one when event_ids is null. It returns the ids marked and wakes the relay.
create function streamseal.quarantine_requeue(event_ids uuid[] default null)
returns setof uuid
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    unknown uuid;
begin
    select u.id into unknown
    from pg_catalog.unnest(quarantine_requeue.event_ids) as u(id)
    where not exists (select from streamseal.quarantine q where q.event_id = u.id)
    limit 1;
    if found then
        raise exception 'quarantine_requeue: event % is not quarantined', unknown using errcode = '22023';
    end if;
    return query
    update streamseal.quarantine q set requeued_at = pg_catalog.now()
    where quarantine_requeue.event_ids is null or q.event_id = any (quarantine_requeue.event_ids)
    returning q.event_id;
    perform pg_catalog.pg_notify('streamseal_stamped', 'requeue');
end
$$;

-- quarantine_requeued returns up to max_events re-queued events in origin_seq order, as the
-- relay publishes them.
create function streamseal.quarantine_requeued(max_events integer)
returns setof streamseal.numbered_events
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select e.event_id, e.local_id, n.origin, n.origin_seq, n.type_seq, n.tenant, e.stream_id, e.stream_version,
           n.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
    from streamseal.quarantine q
    -- Each re-queued event's row by its event_id, then its numbers by the row's local_id, in
    -- fenced probes: the few quarantined rows lead, never a join the planner may turn into a
    -- read of the lane.
    cross join lateral (
        select v.event_id, v.local_id, v.stream_id, v.stream_version, v.flags, v.payload, v.metadata,
               v.occurred_at, v.stored_at
        from streamseal.events v where v.event_id = q.event_id
        offset 0
    ) e
    cross join lateral (
        select x.origin, x.origin_seq, x.type_seq, x.tenant, x.event_type
        from streamseal.own_numbers x where x.local_id = e.local_id
        offset 0
    ) n
    where q.requeued_at is not null
    order by q.origin_seq
    limit quarantine_requeued.max_events
$$;

-- quarantine_release ends a quarantine once the relay's publish was acknowledged.
create function streamseal.quarantine_release(event_id uuid)
returns void
language sql
volatile
set search_path = pg_catalog, pg_temp
as $$
    delete from streamseal.quarantine q where q.event_id = quarantine_release.event_id
$$;
