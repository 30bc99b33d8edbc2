-- checkpoint_inbox: a consumer's received checkpoints waiting for its verifier (migration 029),
-- bounded per origin (migration 038, invariant 13). The inbox (controlplane/inbox through
-- store.CheckpointInboxRecord) records every run of checkpoint messages through here.

-- checkpoint_inbox_record records a run of checkpoint messages, in order: one element per message
-- in each parallel array (origin and subject as the door admitted them, the payload as received,
-- the type_seq range its one lane announces, null on a heartbeat, and whether a later checkpoint
-- of the lane carries everything it does: false when it accepts at-most-once occurrences), and
-- the lane's tenant and event type (null: not described; a described row that announces a range
-- holds its lane's round pairs waiting while it would lower the lane's birth: lane_rounds.sql). An
-- origin may hold at most max_per_origin waiting rows. When a run takes an origin past it, the
-- origin's rows (the run's included) that a later waiting row of the same subject (lane)
-- supersedes are dropped (_checkpoint_inbox_superseded), then the run's newest rows that still do
-- not fit are taken back and refused. Returns one row per origin that went past its cap: how many
-- rows were dropped as superseded, how many wait now, and the positions (1-based) of the run's
-- refused messages, which the caller must record as rejected (they are not stored; a refused
-- row may have superseded rows dropped before it, whose announcements it carries, so the reject
-- names all of them). Nothing when every origin fits. Each origin's rows are counted under a lock
-- of their own, so concurrent runs of one origin cannot overshoot the cap together.
create function streamseal.checkpoint_inbox_record(
    origins text[], subjects text[], payloads bytea[], first_type_seqs bigint[], last_type_seqs bigint[],
    coalescible boolean[], ordered boolean, max_per_origin integer,
    tenants text[] default null, event_types text[] default null)
returns table (origin text, superseded bigint, waiting bigint, refused integer[])
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    given integer := coalesce(pg_catalog.cardinality(checkpoint_inbox_record.origins), 0);
    bad record;
    o record;
    held bigint;
    fresh bigint;
    dropped bigint;
    excess bigint;
    ids bigint[];
begin
    -- GUARD: a run is read whole or refused whole.
    select a.name, a.size into bad
    from (values (1, 'subjects', pg_catalog.cardinality(checkpoint_inbox_record.subjects), pg_catalog.array_ndims(checkpoint_inbox_record.subjects)),
                 (2, 'payloads', pg_catalog.cardinality(checkpoint_inbox_record.payloads), pg_catalog.array_ndims(checkpoint_inbox_record.payloads)),
                 (3, 'first_type_seqs', pg_catalog.cardinality(checkpoint_inbox_record.first_type_seqs), pg_catalog.array_ndims(checkpoint_inbox_record.first_type_seqs)),
                 (4, 'last_type_seqs', pg_catalog.cardinality(checkpoint_inbox_record.last_type_seqs), pg_catalog.array_ndims(checkpoint_inbox_record.last_type_seqs)),
                 (5, 'coalescible', pg_catalog.cardinality(checkpoint_inbox_record.coalescible), pg_catalog.array_ndims(checkpoint_inbox_record.coalescible)),
                 (6, 'tenants', coalesce(pg_catalog.cardinality(checkpoint_inbox_record.tenants), given), pg_catalog.array_ndims(checkpoint_inbox_record.tenants)),
                 (7, 'event_types', coalesce(pg_catalog.cardinality(checkpoint_inbox_record.event_types), given), pg_catalog.array_ndims(checkpoint_inbox_record.event_types)))
         as a(position, name, size, dims)
    where a.size is distinct from given or a.dims > 1
    order by a.position
    limit 1;
    if found or pg_catalog.array_ndims(checkpoint_inbox_record.origins) > 1 then
        raise exception 'checkpoint_inbox_record: % has % elements for % origins: expected one-dimensional arrays parallel to origins',
            coalesce(bad.name, 'origins'), coalesce(bad.size::text, 'null'), given
            using errcode = '22023';
    end if;
    if checkpoint_inbox_record.max_per_origin is null or checkpoint_inbox_record.max_per_origin < 1 then
        raise exception 'checkpoint_inbox_record: max_per_origin % is invalid: expected at least 1',
            coalesce(checkpoint_inbox_record.max_per_origin::text, 'null')
            using errcode = '22023';
    end if;
    if checkpoint_inbox_record.ordered is null then
        raise exception 'checkpoint_inbox_record: ordered null is invalid: expected true or false'
            using errcode = '22023';
    end if;

    -- One lock per origin, taken in origin order (runs naming several origins cannot deadlock),
    -- held to commit, so a count below sees every run of the origin recorded before it.
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('streamseal.checkpoint_inbox'),
                                             pg_catalog.hashtext(coalesce(u.origin, '')))
    from (select distinct x.origin from pg_catalog.unnest(checkpoint_inbox_record.origins) as x(origin) order by x.origin) u;

    -- Identities are drawn as rows are inserted, in position order: ids[k] is message k's row.
    with recorded as (
        insert into streamseal.checkpoint_inbox (origin, subject, payload, ordered, first_type_seq, last_type_seq, coalescible,
                                                 tenant, event_type)
        select u.origin, u.subject, u.payload, checkpoint_inbox_record.ordered, u.first, u.last, coalesce(u.coalescible, false),
               u.tenant, u.event_type
        from rows from (pg_catalog.unnest(checkpoint_inbox_record.origins), pg_catalog.unnest(checkpoint_inbox_record.subjects),
                        pg_catalog.unnest(checkpoint_inbox_record.payloads), pg_catalog.unnest(checkpoint_inbox_record.first_type_seqs),
                        pg_catalog.unnest(checkpoint_inbox_record.last_type_seqs), pg_catalog.unnest(checkpoint_inbox_record.coalescible),
                        pg_catalog.unnest(checkpoint_inbox_record.tenants), pg_catalog.unnest(checkpoint_inbox_record.event_types))
             with ordinality as u(origin, subject, payload, first, last, coalescible, tenant, event_type, position)
        order by u.position
        returning id
    )
    select pg_catalog.array_agg(r.id order by r.id) into ids from recorded r;

    for o in
        select u.origin, pg_catalog.array_agg(u.position order by u.position) as positions
        from pg_catalog.unnest(checkpoint_inbox_record.origins) with ordinality as u(origin, position)
        group by u.origin
        order by u.origin
    loop
        -- Counting an origin's rows costs what it holds, so it is counted only when an upper
        -- bound passes the cap: the rows at its last count plus those recorded since (the
        -- verifier's deletes only lower it). A verifier far behind a large round does not pay a
        -- count per run; a flooded origin pays one bounded by the cap.
        insert into streamseal.checkpoint_inbox_load as l (origin, counted, recorded_since, recorded_since_coalesced)
        values (o.origin, 0, pg_catalog.cardinality(o.positions), pg_catalog.cardinality(o.positions))
        on conflict on constraint checkpoint_inbox_load_pkey
        do update set recorded_since = l.recorded_since + excluded.recorded_since,
                      recorded_since_coalesced = l.recorded_since_coalesced + excluded.recorded_since_coalesced
        returning l.counted + l.recorded_since, l.recorded_since_coalesced into held, fresh;
        if held <= checkpoint_inbox_record.max_per_origin then
            continue;
        end if;
        select pg_catalog.count(*) into held
        from (select from streamseal.checkpoint_inbox c
              where c.origin = o.origin
              limit checkpoint_inbox_record.max_per_origin + pg_catalog.cardinality(o.positions)) c;
        if held <= checkpoint_inbox_record.max_per_origin then
            update streamseal.checkpoint_inbox_load l set counted = held, recorded_since = 0
            where l.origin = o.origin;
            continue;
        end if;
        -- What the run supersedes lies in its own subjects: those are coalesced on every call
        -- (a read of their rows). The whole origin is coalesced only when a tenth of the cap was
        -- recorded since it last was (rows recorded under the cap may be superseded by later
        -- ones, in any subject): at the cap, a flood of rows nothing supersedes pays its own
        -- subjects per run, not the cap.
        dropped := streamseal._checkpoint_inbox_superseded(o.origin,
            (select pg_catalog.array_agg(distinct checkpoint_inbox_record.subjects[p.position])
             from pg_catalog.unnest(o.positions) as p(position)));
        if fresh >= greatest(checkpoint_inbox_record.max_per_origin / 10, 1) then
            dropped := dropped + streamseal._checkpoint_inbox_superseded(o.origin, null);
            fresh := 0;
        end if;
        -- Not counted again: under the origin's lock only the verifier removes rows meanwhile,
        -- so this errs by refusing what its removals would have let in, never by overshooting.
        held := held - dropped;
        excess := greatest(held - checkpoint_inbox_record.max_per_origin, 0);
        refused := '{}';
        if excess > 0 then
            -- The run's newest rows of the origin still waiting (not dropped as superseded) are
            -- taken back, the earliest kept.
            with taken as (
                delete from streamseal.checkpoint_inbox c
                using (select p.position, ids[p.position] as id
                       from pg_catalog.unnest(o.positions) as p(position)
                       where exists (select from streamseal.checkpoint_inbox w where w.id = ids[p.position])
                       order by p.position desc
                       limit excess) t
                where c.id = t.id
                returning t.position
            )
            select coalesce(pg_catalog.array_agg(t.position order by t.position), '{}') into refused from taken t;
        end if;
        origin := o.origin;
        superseded := dropped;
        waiting := held - excess;
        update streamseal.checkpoint_inbox_load l
        set counted = checkpoint_inbox_record.waiting, recorded_since = 0,
            recorded_since_coalesced = case when fresh = 0 then 0
                                            else greatest(l.recorded_since_coalesced - pg_catalog.cardinality(refused), 0) end
        where l.origin = o.origin;
        return next;
    end loop;
end
$$;

-- _checkpoint_inbox_superseded drops the waiting rows of origin (of the given subjects; null:
-- all) that a later waiting row of the same subject supersedes, and returns how many. The verifier's state of a lane (lanes.sql) keeps
-- the highest type_seq any checkpoint announced and judges holes up to it, so a checkpoint adds
-- nothing to a later one of its lane that announces at least as far, save three things, which
-- keep a row: its at-most-once acceptances (coalescible false), its birth of the lane (the
-- subject's oldest row announcing a range is never dropped: a lane is born at the first range it
-- sees) and its order proof (dropped with it: the later row's holes are then confirmed by two
-- cycles instead of one, later, never lost). A heartbeat is superseded by any later row. The
-- newest row of a subject is never dropped, nor one announcing beyond every later row, nor a row
-- the verifier holds (locked rows are skipped).
create function streamseal._checkpoint_inbox_superseded(origin text, subjects text[])
returns bigint
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    dropped bigint;
begin
    if _checkpoint_inbox_superseded.subjects is null then
        select pg_catalog.array_agg(distinct c.subject) into _checkpoint_inbox_superseded.subjects
        from streamseal.checkpoint_inbox c
        where c.origin = _checkpoint_inbox_superseded.origin;
    end if;
    -- Subject by subject through the (origin, subject, id) index: a test of each row against
    -- the list instead read 50 000 rows against 500 subjects per call.
    with wanted as (
        select distinct w.subject from pg_catalog.unnest(_checkpoint_inbox_superseded.subjects) as w(subject)
    ), lane_rows as (
        select c.id, c.coalescible, c.last_type_seq,
               pg_catalog.count(*) over later as later_rows,
               pg_catalog.max(c.last_type_seq) over later as later_last,
               pg_catalog.min(c.id) filter (where c.first_type_seq is not null) over (partition by c.subject) as birth_id
        from wanted w
        join streamseal.checkpoint_inbox c
          on c.origin = _checkpoint_inbox_superseded.origin and c.subject = w.subject
        window later as (partition by c.subject order by c.id desc rows between unbounded preceding and 1 preceding)
    ), droppable as (
        select c.id
        from streamseal.checkpoint_inbox c
        join lane_rows l on l.id = c.id
        where l.coalescible
          and l.later_rows > 0
          and (l.last_type_seq is null or l.later_last >= l.last_type_seq)
          and l.id is distinct from l.birth_id
        for update of c skip locked
    ), deleted as (
        delete from streamseal.checkpoint_inbox c
        using droppable d
        where c.id = d.id
        returning 1
    )
    select pg_catalog.count(*) into dropped from deleted;
    return dropped;
end
$$;
