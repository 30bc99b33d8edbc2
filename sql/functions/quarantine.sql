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
    select e.origin_seq into seq
    from streamseal.own_events e
    where e.event_id = quarantine_event.event_id and e.origin = streamseal.service_name() and e.origin_seq is not null;
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
    select e.*
    from streamseal.quarantine q
    join streamseal.own_events e on e.event_id = q.event_id
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
