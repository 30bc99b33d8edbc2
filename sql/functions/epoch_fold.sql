-- The one canonical fold of a lane's sequence range, shared by close_epochs, verify_digest_epochs
-- and the live fringes of type_digests, so the predicates (what counts, which key) cannot drift
-- apart. Plus the lane lock that keeps a fold from racing an uncommitted write into its range.
-- Deliberately LANGUAGE sql without a SET clause so Postgres can inline them (names qualified).

-- _epoch_fold folds the counted events of lane with origin_seq in [from_seq, to_seq), per
-- (tenant, event_type). Received lanes key on the origin's sequence, exactly like the own lane.
create function streamseal._epoch_fold(lane text, from_seq bigint, to_seq bigint)
returns table (tenant text, event_type text, x0 bigint, x1 bigint, n bigint)
language sql
stable
as $$
    select e.tenant, e.event_type,
           pg_catalog.bit_xor(streamseal._h0(e.event_id)),
           pg_catalog.bit_xor(streamseal._h1(e.event_id)),
           pg_catalog.count(*)
    from streamseal.event_numbers e
    where e.origin = _epoch_fold.lane
      and e.origin_seq >= _epoch_fold.from_seq
      and e.origin_seq < _epoch_fold.to_seq
      and streamseal._counts_in_digest(e.origin_seq, e.flags)
    group by e.tenant, e.event_type
$$;

-- _lane_lock_key is the advisory lock of one lane. Writers of counted events take it shared
-- (in origin order); close_epochs and verify_digest_epochs try it exclusively, so an epoch is
-- never folded while a write into it is uncommitted, and closers never wait (no deadlock).
create function streamseal._lane_lock_key(lane text)
returns bigint
language sql
immutable
as $$ select pg_catalog.hashtextextended('streamseal.lane:' || _lane_lock_key.lane, 0) $$;

-- _lane_max_seq is the highest origin_seq of lane still stored (null when none): one index read
-- from the top of each place numbers live (a max over the view numbered_events reads the lane:
-- the planner cannot take it from the top of a join).
create function streamseal._lane_max_seq(lane text)
returns bigint
language sql
stable
as $$
    select greatest(
        (select pg_catalog.max(e.origin_seq) from streamseal.events e where e.origin = _lane_max_seq.lane),
        (select pg_catalog.max(n.origin_seq) from streamseal.own_numbers n where n.origin = _lane_max_seq.lane))
$$;

-- _lane_settled_max is the highest origin_seq of lane that is settled: stamped for the own lane;
-- for a received lane, stored before now() - settle. Null when nothing is settled. It walks the
-- (origin, origin_seq) index down from the top, so it costs the fresh rows above it, not the lane.
create function streamseal._lane_settled_max(lane text, settle interval)
returns bigint
language sql
stable
as $$
    select case
        when _lane_settled_max.lane = (select s.name from streamseal.service s)
            then nullif((select st.last_origin_seq from streamseal.stamp_state st), 0)
        else (select e.origin_seq
              from streamseal.events e
              where e.origin = _lane_settled_max.lane
                and e.origin_seq is not null
                and e.stored_at < pg_catalog.now() - _lane_settled_max.settle
              order by e.origin_seq desc
              limit 1)
    end
$$;
