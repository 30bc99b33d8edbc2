-- sent_requests.sql: a consumer's check that a redelivery answer answers a request it sent
-- (invariant 12). The redelivery receiver calls check_redelivery_answer before it stores a bundle
-- or acts on a summary; a forged or replayed answer changes no lane, seal, gap or readiness.

-- check_redelivery_answer returns null when an answer from origin to request_id answers an open
-- request this service sent to that origin and every item it carries lies within the request's
-- scope; otherwise the drop reason: 'unsolicited' (no such request to that origin), 'replayed'
-- (its final summary came already), 'out_of_scope' (an item the request did not ask for). Items
-- are parallel arrays, one element per bundled event (type_seq range [ts, ts + 1)) or per
-- "cannot re-deliver" entry; a null element is not stated and not checked (a null event type
-- skips the tenant check too: such an entry changes no lane). final marks the request answered
-- (a summary), so later summaries of it are replays, and later bundles too unless grace allows
-- them (_answered_within_grace): replicas of one consumer share the control durable, so one may
-- handle the summary before another has stored the bundles fetched ahead of it; a bundle handled
-- less than grace after the answer is checked as if the request were open (and stored twice adds
-- nothing: ingest skips a known event id). Null or zero grace: none.
-- A broadcast request (sent_requests origin '_all': a backfill) may be answered by any origin,
-- each once: its summary closes the request for that origin only (broadcast_answers), and its
-- items must be of a type the request names and a (tenant, type) this service consumes.
-- lane, when given and not the sender, says the items are forwarded copies of lane's events (a
-- third service's answer to a backfill, backfill_answers.sql): they answer a backfill's request
-- only (its broadcast or a follow-up), never a directed repair (which asked the origin for its
-- own lane), never as this service's own events, and must be of a (lane, tenant, type) this
-- service consumes.
create function streamseal.check_redelivery_answer(request_id uuid, origin text, final boolean,
                                                   tenants text[], event_types text[], stream_ids text[],
                                                   origin_seq_lo bigint[], origin_seq_hi bigint[],
                                                   type_seq_lo bigint[], type_seq_hi bigint[],
                                                   lane text default null, grace interval default null)
returns text
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    sent streamseal.sent_requests;
    answered boolean;
    answered_at timestamptz;
    outside boolean;
    broadcast boolean := false;
    consumed_scope boolean;
begin
    select * into sent from streamseal.sent_requests s
    where s.request_id = check_redelivery_answer.request_id and s.origin = check_redelivery_answer.origin
    for update;
    if not found then
        -- A broadcast (a backfill: origin '_all') has no single origin: any origin may answer it,
        -- each once (broadcast_answers), within its scope; the origin is the authenticated sender.
        select * into sent from streamseal.sent_requests s
        where s.request_id = check_redelivery_answer.request_id and s.origin = '_all'
          and check_redelivery_answer.origin ~ '^[a-z][a-z0-9-]{0,62}$';
        if not found then
            return 'unsolicited';
        end if;
        broadcast := true;
        select a.answered_broadcast, a.answered_broadcast_at into answered, answered_at
        from streamseal.broadcast_answers a
        where a.backfill = check_redelivery_answer.request_id and a.origin = check_redelivery_answer.origin;
        answered := coalesce(answered, false);
    else
        answered := sent.answered_at is not null;
        answered_at := sent.answered_at;
    end if;
    -- GUARD: an answered request takes no second summary, and a late bundle only within the grace.
    if answered and not streamseal._answered_within_grace(check_redelivery_answer.final, answered_at,
                                                          check_redelivery_answer.grace, sent.sent_at,
                                                          coalesce(check_redelivery_answer.lane, check_redelivery_answer.origin)) then
        return 'replayed';
    end if;
    -- A backfill's requests (its broadcast and the follow-ups of truncated answers) name no tenant:
    -- they ask for what this service consumes.
    consumed_scope := sent.backfill is not null;
    -- GUARD: forwarded copies (invariants 11 and 12) answer a backfill only, name a real lane,
    -- and never claim this service's own events.
    if check_redelivery_answer.lane is not null and check_redelivery_answer.lane <> check_redelivery_answer.origin
       and (not consumed_scope or check_redelivery_answer.lane !~ '^[a-z][a-z0-9-]{0,62}$'
            or check_redelivery_answer.lane = streamseal.service_name()) then
        return 'out_of_scope';
    end if;

    -- The (tenant, type) scope is checked once per distinct pair, not per item: a backfill's
    -- bundle carries hundreds of events of one or two pairs, and a subscription lookup per event
    -- was a third of the consumer's time per bundle (bench backfill).
    select exists (
        select
        from (select distinct p.tenant, p.event_type
              -- unnest of several arrays is FROM-clause syntax (rows from), so it is not schema-qualified.
              from unnest(check_redelivery_answer.tenants, check_redelivery_answer.event_types) as p(tenant, event_type)
              where p.event_type is not null
              -- A fence: the checks below run once per pair, not pushed down to every item.
              offset 0) item
        where not coalesce(sent.request -> 'types' ? item.event_type, false)
           or (not consumed_scope and not coalesce(sent.request -> 'tenants' ? coalesce(item.tenant, ''), false))
           or (consumed_scope and not streamseal.subscribed(coalesce(check_redelivery_answer.lane, check_redelivery_answer.origin),
                                                            coalesce(item.tenant, ''), item.event_type))
    ) into outside;
    -- The numbers and streams, per item, only when the request named any (a backfill names none).
    if not outside and (pg_catalog.jsonb_array_length(coalesce(sent.request -> 'streams', '[]')) > 0
                        or sent.request ? 'from_seq' or sent.request ? 'to_seq'
                        or pg_catalog.jsonb_array_length(coalesce(sent.request -> 'type_seq_ranges', '[]')) > 0) then
        select exists (
            select
            -- unnest of several arrays is FROM-clause syntax (rows from), so it is not schema-qualified.
            from unnest(check_redelivery_answer.stream_ids,
                        check_redelivery_answer.origin_seq_lo, check_redelivery_answer.origin_seq_hi,
                        check_redelivery_answer.type_seq_lo, check_redelivery_answer.type_seq_hi)
                 as item(stream_id, os_lo, os_hi, ts_lo, ts_hi)
            where (item.stream_id is not null and pg_catalog.jsonb_array_length(coalesce(sent.request -> 'streams', '[]')) > 0
                   and not sent.request -> 'streams' ? item.stream_id)
               or (item.os_lo is not null and sent.request ? 'from_seq'
                   and item.os_lo < (sent.request ->> 'from_seq')::bigint)
               or (item.os_lo is not null and sent.request ? 'to_seq'
                   and coalesce(item.os_hi, item.os_lo + 1) > (sent.request ->> 'to_seq')::bigint)
               or (item.ts_lo is not null and pg_catalog.jsonb_array_length(coalesce(sent.request -> 'type_seq_ranges', '[]')) > 0
                   and not exists (
                       select
                       from pg_catalog.jsonb_array_elements(sent.request -> 'type_seq_ranges') as r(pair)
                       where (r.pair ->> 0)::bigint <= item.ts_lo
                         and coalesce(item.ts_hi, item.ts_lo + 1) <= (r.pair ->> 1)::bigint))
        ) into outside;
    end if;
    if outside then
        return 'out_of_scope';
    end if;

    if check_redelivery_answer.final and broadcast then
        insert into streamseal.broadcast_answers as a (backfill, origin, answered_broadcast, answered_broadcast_at)
        values (check_redelivery_answer.request_id, check_redelivery_answer.origin, true, pg_catalog.now())
        on conflict on constraint broadcast_answers_pkey do update
        set answered_broadcast = true, answered_broadcast_at = pg_catalog.now(), updated_at = pg_catalog.now();
    elsif check_redelivery_answer.final then
        update streamseal.sent_requests s set answered_at = pg_catalog.now()
        where s.request_id = check_redelivery_answer.request_id;
    end if;
    return null;
end
$$;

-- _answered_within_grace says whether an answer to a request already answered at answered_at (by
-- this origin, for a broadcast) is still checked and stored: a bundle (not final) handled less than
-- grace after the answer, while no history change of its lane was applied to this store's copies
-- since the request was sent (copy_history_cursors, copy_closes: applied_at >= sent_at). The bound
-- is what lets grace exist at all: an old bundle could hold an event the origin has removed or
-- reclassified, or a stream it closed, since; stored again it would undo that change for good
-- (the cursor has passed it). Such a bundle is dropped as before and the checkpoints ask again.
-- answered_at null (a broadcast answered before migration 046): unknown, so no grace.
create function streamseal._answered_within_grace(final boolean, answered_at timestamptz, grace interval,
                                                  sent_at timestamptz, lane text)
returns boolean
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select not _answered_within_grace.final
       and coalesce(_answered_within_grace.grace > interval '0', false)
       and coalesce(_answered_within_grace.answered_at > pg_catalog.now() - _answered_within_grace.grace, false)
       and not exists (select from streamseal.copy_history_cursors k
                       where k.origin = _answered_within_grace.lane and k.applied_at >= _answered_within_grace.sent_at)
       and not exists (select from streamseal.copy_closes k
                       where k.origin = _answered_within_grace.lane and k.applied_at >= _answered_within_grace.sent_at)
$$;

-- _origin_answer_time is how long the origin took to answer this service lately: the longest
-- time from sending to the final summary among its 16 most recently answered requests (null when
-- none was answered). Only answered requests are samples: an unanswered one may be lost, and
-- waiting on it would stall the re-asks that exist to recover it. The lanes' re-ask deadline
-- waits at least twice this (mark_requested), so a consumer whose answers queue behind its own
-- inbox does not ask again for what is already on its way. since, when given, keeps only requests
-- sent from then on (the caller's process start): answers a crash held back (prefetched by the
-- dead process, redelivered after the broker's ack wait) measure the crash, not the origin.
create function streamseal._origin_answer_time(origin text, since timestamptz default null)
returns interval
language sql
stable
-- No SET clause: an inlinable helper (see the README's design notes).
as $$
    select pg_catalog.max(r.answered_at - r.sent_at)
    from (
        select s.answered_at, s.sent_at
        from streamseal.sent_requests s
        where s.origin = _origin_answer_time.origin and s.answered_at is not null
          and (_origin_answer_time.since is null or s.sent_at >= _origin_answer_time.since)
        order by s.answered_at desc
        limit 16
    ) r
$$;
