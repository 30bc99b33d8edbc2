-- stamp: the commit-order stamper. Called in a loop by the control plane (woken by the
-- 'streamseal_unstamped' NOTIFY an own insert sends while a stamper sleeps: stamper_sleep.sql);
-- applications may call it too.
-- It numbers only committed own events, under one lock, above everything already numbered, so a
-- transaction that commits later can never receive a lower origin_seq than one already stamped
-- (invariant 7), and no number is ever skipped or reused.

-- stamp numbers up to max_events committed, unstamped own events in insertion order: origin_seq
-- dense per service, type_seq dense per (tenant, event_type). One set-based narrow insert into
-- own_numbers (events are never updated, nor read: issue 16) and, in the same statement, the
-- digest fold of what it numbered.
-- Returns how many it stamped, the lane's last origin_seq (stamped now or before) and how long
-- the batch's oldest event waited since it was stored (the stamper lag; null when it stamped
-- none), and NOTIFYs 'streamseal_stamped' with that number when it stamped any.
create function streamseal.stamp(max_events integer default 10000)
returns table (stamped integer, last_origin_seq bigint, oldest_wait_seconds double precision)
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
-- No JIT on the write path: compiling took ~60 ms a statement whenever a cached plan's
-- estimate (a transition table sized by an earlier bulk statement) crossed jit_above_cost.
set jit = off
-- Plans kept for the session (issue 20): planning every statement was about half the cost of
-- a small batch (50 events: the relay's round). stamp() has no range predicate a generic plan
-- could misjudge (it reads the queue by its key, never events), and stating the mode here keeps
-- a caller that forces custom plans (relay_page) from passing that on to stamp() and what it
-- calls.
set plan_cache_mode = auto
-- Above all for the claim, which must read the queue by its key, never sequentially: the queue's
-- heap is mostly dead rows between vacuums (a row per own event, deleted here), and a sequential
-- scan visits them all. Every other statement here (and in what it calls) reads by a key too.
set enable_seqscan = off
as $$
declare
    self text := streamseal.service_name();
    base_seq bigint;
    local_ids bigint[];
    event_ids uuid[];
    tenants text[];
    event_types text[];
    stream_ids text[];
    flag_values integer[];
    stamped_count integer;
    folded_buckets bigint;
    closed_below bigint;
    oldest_stored timestamptz;
begin
    if stamp.max_events is null or stamp.max_events < 1 then
        raise exception 'stamp: max_events % is invalid: expected a positive batch size', stamp.max_events
            using errcode = '22023';
    end if;
    -- GUARD: each statement below must see the commits that happened while we waited for the
    -- lock; only READ COMMITTED takes a fresh snapshot per statement.
    if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
        raise exception 'stamp: must run under READ COMMITTED, not %', pg_catalog.current_setting('transaction_isolation')
            using errcode = '25000';
    end if;

    -- One stamper at a time per database, held to commit: the next one starts above our numbers.
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('streamseal.stamp', 0));
    select s.last_origin_seq into base_seq from streamseal.stamp_state s;

    -- The batch: claimed from the queue (migrations 032, 034), committed own events not numbered
    -- yet, in insertion order, each with its keys. The insert trigger queued each in its appending
    -- transaction, so only committed ones are visible. Claiming deletes (and so locks) the queue
    -- rows: a concurrent DELETE or UPDATE of one of these events removes or touches its queue row
    -- in its trigger, so it waits until the numbers are committed and then sees them (the event
    -- leaves with its number recorded as removed; an update of what the numbers were taken from
    -- is refused). The other way round, a claim that waits on a queue row an UPDATE changed gets
    -- the row's new version back from RETURNING (the update trigger keeps the keys in step), and
    -- one an event's DELETE removed is skipped. So the keys are the event's current ones and
    -- events is not read at all (issue 16: that probe per event was a seventh of a stamp), nor
    -- updated, nor locked: stamping is the narrow insert into own_numbers.
    with claimed as (
        delete from streamseal.unstamped u
        where u.local_id = any (array(
            select q.local_id from streamseal.unstamped q order by q.local_id limit stamp.max_events))
        returning u.local_id, u.event_id, u.tenant, u.event_type, u.stream_id, u.flags, u.stored_at
    )
    select pg_catalog.array_agg(c.local_id order by c.local_id),
           pg_catalog.array_agg(c.event_id order by c.local_id),
           pg_catalog.array_agg(c.tenant order by c.local_id),
           pg_catalog.array_agg(c.event_type order by c.local_id),
           pg_catalog.array_agg(c.stream_id order by c.local_id),
           pg_catalog.array_agg(c.flags order by c.local_id),
           pg_catalog.min(c.stored_at)
    into local_ids, event_ids, tenants, event_types, stream_ids, flag_values, oldest_stored
    from claimed c;
    if event_ids is null then
        return query select 0, base_seq, null::double precision;
        return;
    end if;

    -- The digest fold rides the numbering statement (one upsert per bucket, in key order, no
    -- change array handed through _fold_changes: issue 16). The lane lock _fold_changes takes
    -- after its upsert is taken here before it, so a closer holding the lane has committed and one
    -- that comes later sees our rows; closers only try that lock, so waiting on it cannot deadlock.
    perform pg_catalog.pg_advisory_xact_lock_shared(streamseal._lane_lock_key(self));
    select le.closed_through * le.width into closed_below from streamseal.lane_epochs le where le.origin = self;

    with batch as (
        select u.local_id, u.event_id, u.tenant, u.event_type, u.stream_id, u.flags, u.position
        from rows from (pg_catalog.unnest(local_ids), pg_catalog.unnest(event_ids), pg_catalog.unnest(tenants),
                        pg_catalog.unnest(event_types), pg_catalog.unnest(stream_ids), pg_catalog.unnest(flag_values))
             with ordinality as u(local_id, event_id, tenant, event_type, stream_id, flags, position)
    ), prior as (
        select c.tenant, c.event_type, c.last_type_seq
        from streamseal.type_seq_counters c
        where (c.tenant, c.event_type) in (select b.tenant, b.event_type from batch b)
    ), numbered as (
        select b.local_id, b.event_id, b.tenant, b.event_type, b.stream_id, b.flags,
               base_seq + b.position as origin_seq,
               coalesce(p.last_type_seq, 0)
                   + pg_catalog.row_number() over (partition by b.tenant, b.event_type order by b.position) as type_seq
        from batch b
        left join prior p on p.tenant = b.tenant and p.event_type = b.event_type
    ), type_counters as (
        insert into streamseal.type_seq_counters as c (tenant, event_type, last_type_seq)
        select n.tenant, n.event_type, pg_catalog.max(n.type_seq)
        from numbered n
        group by n.tenant, n.event_type
        on conflict (tenant, event_type) do update set last_type_seq = excluded.last_type_seq
    ), stamped_rows as (
        insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
        select self, n.origin_seq, n.type_seq, n.event_id, n.tenant, n.event_type, n.stream_id, n.flags, n.local_id
        from numbered n
        order by n.origin_seq
        returning 1
    ), folded as (
        -- What _apply_digest_deltas does, for the newly counted events.
        insert into streamseal.stream_digests as d (origin, tenant, event_type, stream_id, x0, x1, n, updated_at)
        select self, n.tenant, n.event_type, n.stream_id,
               pg_catalog.bit_xor(streamseal._h0(n.event_id)), pg_catalog.bit_xor(streamseal._h1(n.event_id)),
               pg_catalog.count(*), pg_catalog.now()
        from numbered n
        where streamseal._counts_in_digest(n.origin_seq, n.flags)
        group by n.tenant, n.event_type, n.stream_id
        order by n.tenant, n.event_type, n.stream_id
        on conflict (origin, tenant, event_type, stream_id) do update
            set x0 = d.x0 # excluded.x0,
                x1 = d.x1 # excluded.x1,
                n = d.n + excluded.n,
                updated_at = excluded.updated_at
        returning 1
    )
    select (select pg_catalog.count(*)::integer from stamped_rows), (select pg_catalog.count(*) from folded)
    into stamped_count, folded_buckets;

    -- GUARD: every claimed event must have been numbered, or the counter would skip numbers.
    if stamped_count <> pg_catalog.cardinality(event_ids) then
        raise exception 'stamp: numbered % of % locked events; refusing to leave a gap', stamped_count, pg_catalog.cardinality(event_ids)
            using errcode = 'XX000';
    end if;
    -- New numbers lie above everything stamped, so never in a closed epoch, unless an epoch was
    -- closed past the stamped lane (history loaded with the triggers off): then fold them into
    -- it as _fold_changes would.
    if closed_below > base_seq + 1 then
        perform streamseal._apply_epoch_deltas(array(
            select row(self, n.origin_seq / le.width, n.tenant, n.event_type,
                       pg_catalog.bit_xor(streamseal._h0(n.event_id)), pg_catalog.bit_xor(streamseal._h1(n.event_id)),
                       pg_catalog.count(*))::streamseal._epoch_delta
            from streamseal.own_numbers n
            join streamseal.lane_epochs le on le.origin = self
            where n.origin = self and n.origin_seq > base_seq and n.origin_seq < closed_below
              and n.origin_seq <= base_seq + stamped_count
              and streamseal._counts_in_digest(n.origin_seq, n.flags)
            group by n.origin_seq / le.width, n.tenant, n.event_type));
    end if;
    update streamseal.stamp_state s set last_origin_seq = base_seq + stamped_count;

    -- Listeners hear it at commit, when the numbers are visible.
    perform pg_catalog.pg_notify('streamseal_stamped', (base_seq + stamped_count)::text);
    return query select stamped_count, base_seq + stamped_count,
        pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - oldest_stored);
end
$$;

-- _own_numbers_adopt moves numbers found on own events in streamseal.events into own_numbers, as
-- migration 032 does for a database the previous release stamped. For bulk loaders (benches,
-- tests) that write numbered own history straight into events with the write-path triggers
-- disabled (with them enabled the insert is refused); call it before enabling them again.
-- Returns how many events it moved.
create function streamseal._own_numbers_adopt()
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    self text := streamseal.service_name();
    moved bigint;
begin
    insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
    select e.origin, e.origin_seq, e.type_seq, e.event_id, e.tenant, e.event_type, e.stream_id, e.flags, e.local_id
    from streamseal.events e
    where e.origin = self and e.origin_seq is not null;
    get diagnostics moved = row_count;
    update streamseal.events e
    set origin_seq = null, type_seq = null
    where e.origin = self and e.origin_seq is not null;
    return moved;
end
$$;
