-- stamp: the commit-order stamper. Called in a loop by the control plane (woken by the
-- 'streamseal_unstamped' NOTIFY that every own insert sends); applications may call it too.
-- It numbers only committed own events, under one lock, above everything already numbered, so a
-- transaction that commits later can never receive a lower origin_seq than one already stamped
-- (invariant 7), and no number is ever skipped or reused.

-- stamp numbers up to max_events committed, unstamped own events in insertion order: origin_seq
-- dense per service, type_seq dense per (tenant, event_type). One set-based statement; the
-- digest fold rides the UPDATE trigger. Returns how many it stamped and the lane's last origin_seq
-- (stamped now or before), and NOTIFYs 'streamseal_stamped' with that number when it stamped any.
create function streamseal.stamp(max_events integer default 10000)
returns table (stamped integer, last_origin_seq bigint)
language plpgsql
volatile
set search_path = ''
as $$
declare
    self text := streamseal.service_name();
    stamped_count integer;
    last_seq bigint;
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

    with batch as (
        select e.event_id, e.tenant, e.event_type, e.local_id
        from streamseal.events e
        where e.origin_seq is null and e.origin = self
        order by e.local_id
        limit stamp.max_events
        -- Locked, so a concurrent DELETE cannot take a row out after it got a number (a gap).
        for update
    ), base as (
        select s.last_origin_seq from streamseal.stamp_state s
    ), prior as (
        select c.tenant, c.event_type, c.last_type_seq
        from streamseal.type_seq_counters c
        where (c.tenant, c.event_type) in (select b.tenant, b.event_type from batch b)
    ), numbered as (
        select b.event_id, b.tenant, b.event_type,
               base.last_origin_seq + pg_catalog.row_number() over (order by b.local_id) as origin_seq,
               coalesce(p.last_type_seq, 0)
                   + pg_catalog.row_number() over (partition by b.tenant, b.event_type order by b.local_id) as type_seq
        from batch b
        cross join base
        left join prior p on p.tenant = b.tenant and p.event_type = b.event_type
    ), type_counters as (
        insert into streamseal.type_seq_counters as c (tenant, event_type, last_type_seq)
        select n.tenant, n.event_type, pg_catalog.max(n.type_seq)
        from numbered n
        group by n.tenant, n.event_type
        on conflict (tenant, event_type) do update set last_type_seq = excluded.last_type_seq
    ), lane_counter as (
        update streamseal.stamp_state s
        set last_origin_seq = (select pg_catalog.max(n.origin_seq) from numbered n)
        where exists (select 1 from numbered)
    ), stamped_rows as (
        update streamseal.events e
        set origin_seq = n.origin_seq, type_seq = n.type_seq, stamped_at = pg_catalog.now()
        from numbered n
        where e.event_id = n.event_id
        returning e.origin_seq
    )
    select pg_catalog.count(*)::integer, pg_catalog.max(r.origin_seq)
    into stamped_count, last_seq
    from stamped_rows r;

    if stamped_count > 0 then
        -- Listeners hear it at commit, when the numbers are visible.
        perform pg_catalog.pg_notify('streamseal_stamped', last_seq::text);
    end if;
    return query select stamped_count, coalesce(last_seq, (select s.last_origin_seq from streamseal.stamp_state s));
end
$$;
