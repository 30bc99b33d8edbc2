-- The application feed and its resume tokens (issue 17; DESIGN.md "Read side", invariant 15).
-- read_feed hands a reader every row this store takes, in commit order, and a token naming per
-- origin a certified boundary in that origin's own numbers. Callers: the Go package feed
-- (Subscribe), `streamseal run --feed-addr` (SSE), `streamseal tail`, and applications directly.
--
-- Commit order without a sequencer for copies: each row records the transaction that landed it
-- (events.landed_xid, migration 031). A reader takes copies with landed_xid below the horizon
-- (_feed_horizon: the lowest xid of this database still in progress in its snapshot), in
-- (landed_xid, local_id) order: every transaction that could still commit a row here has an xid
-- at or above that horizon, so past a position a reader never later finds a committed row below
-- it. Own events come by origin_seq up to what the stamper certified (it numbers in commit
-- order, invariant 7). A long-running transaction of this database that holds an xid holds the
-- copies' delivery back until it ends (feed_horizon reports it); one of another database does not.
--
-- Token v1, bytes (big-endian integers), then base64url without padding:
--   [0] version 1 · [1] flags (1 = local part present) · 8 scope digest · 8 membership digest ·
--   int2 member count n · n × (name length byte, name, int8 generation, int8 boundary B) ·
--   local part: 8 store id, int8 own position, int8 copies xid (-1: rows that landed before the
--   feed), int8 copies local_id, int8 replay live start xid (0: no replay), int2 replay count m,
--   m × (name length byte, name, int8 next origin_seq) · 8 checksum (sha256 of all before).
-- B means: every event of that origin with origin_seq < B in this scope has been handed to the
-- reader. The local part is a position in this database only, honoured where the store id
-- (system identifier, database, incarnation, the primary's timeline: _feed_store_id) matches;
-- elsewhere the boundaries are admitted and replayed inclusively. The checksum catches damage, not forgery:
-- a token only ever decides what its own holder reads again.

-- _feed_row: one event as the feed hands it out (the batch is built as an array of these).
create type streamseal._feed_row as (
    event_id uuid, origin text, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
    stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
    occurred_at timestamptz, stored_at timestamptz
);

-- _feed_token: a decoded token.
create type streamseal._feed_token as (
    version integer, scope_digest bytea, membership_digest bytea, members text[], generations bigint[],
    boundaries bigint[], store_id bytea, own_position bigint, copies_xid bigint, copies_local_id bigint,
    live_start_xid bigint, replay_origins text[], replay_next bigint[]
);

-- _feed_refuse raises a feed refusal. SQLSTATEs: SS400 a bad request (a malformed token, another
-- scope), SS409 a conflict (the history the token describes changed or is ahead of this store),
-- SS410 gone (this store cannot serve what the token needs). Go maps them to feed.ErrBadToken,
-- ErrConflict and ErrGone; HTTP to 400, 409 and 410.
create function streamseal._feed_refuse(code text, message text)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception '%', _feed_refuse.message using errcode = _feed_refuse.code;
end
$$;

-- _feed_require_scope refuses a scope that is not one: null means every type (or tenant); a
-- list must be non-empty and name each entry ('' is the single-tenant service's tenant).
create function streamseal._feed_require_scope(event_types text[], tenants text[], max_events integer)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    if _feed_require_scope.event_types is not null and (pg_catalog.cardinality(_feed_require_scope.event_types) = 0
       or exists (select from pg_catalog.unnest(_feed_require_scope.event_types) t(n) where t.n is null or t.n = '')) then
        raise exception 'read_feed: event_types % is invalid: expected null (every type) or a non-empty list of names',
            _feed_require_scope.event_types using errcode = '22023';
    end if;
    if _feed_require_scope.tenants is not null and (pg_catalog.cardinality(_feed_require_scope.tenants) = 0
       or exists (select from pg_catalog.unnest(_feed_require_scope.tenants) t(n) where t.n is null)) then
        raise exception 'read_feed: tenants % is invalid: expected null (every tenant) or a non-empty list of names',
            _feed_require_scope.tenants using errcode = '22023';
    end if;
    if _feed_require_scope.max_events is null or _feed_require_scope.max_events < 1 or _feed_require_scope.max_events > 10000 then
        raise exception 'read_feed: max_events % is invalid: expected 1 to 10000', coalesce(_feed_require_scope.max_events::text, 'null')
            using errcode = '22023';
    end if;
end
$$;

-- _feed_scope_digest names a scope in 8 bytes: sorted distinct types and tenants, '*' for all.
-- The small helpers a read calls once each are plpgsql, not SQL: a SQL function with a SET clause
-- is never inlined, and outside a loop its statement was parsed and planned again in every
-- transaction (run_handler: a read a transaction); plpgsql keeps its plans for the session. They
-- set plan_cache_mode = auto: read_feed forces custom plans for its range reads, and a function
-- it calls inherits that (each of their statements planned again on every read). Their
-- statements read arrays and small keyed tables, where a generic plan cannot misjudge a range.
create function streamseal._feed_scope_digest(event_types text[], tenants text[])
returns bytea
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    return pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(
        'streamseal.feed.v1' || chr(30)
        || coalesce((select pg_catalog.string_agg(distinct t.n, chr(31) order by t.n)
                     from pg_catalog.unnest(_feed_scope_digest.event_types) t(n)), '*')
        || chr(30)
        || coalesce((select pg_catalog.string_agg(distinct '=' || t.n, chr(31) order by '=' || t.n)
                     from pg_catalog.unnest(_feed_scope_digest.tenants) t(n)), '*'),
        'UTF8')), 1, 8);
end
$$;

-- _feed_membership_digest binds an origin set and its generations in 8 bytes.
create function streamseal._feed_membership_digest(members text[], generations bigint[])
returns bytea
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    return pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(coalesce(
        (select pg_catalog.string_agg(u.name || ':' || u.generation::text, ',' order by u.name)
         from rows from (pg_catalog.unnest(_feed_membership_digest.members), pg_catalog.unnest(_feed_membership_digest.generations)) u(name, generation)),
        ''), 'UTF8')), 1, 8);
end
$$;

-- _feed_store_id names this database for the local part of a token: the cluster's system
-- identifier, the database, the incarnation row (migration 031) and, on a primary, the timeline
-- it writes (a promoted standby or a point-in-time restore starts a new one); on a standby, the
-- server's start time instead: a standby replays behind its primary and behind other standbys,
-- so a position taken on one server is honoured by no other (admission and replay instead).
create function streamseal._feed_store_id()
returns bytea
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    return (select pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(
        s.system_identifier::text || '/' || d.oid::text || '/' || f.incarnation::text || '/'
        || case when pg_catalog.pg_is_in_recovery() then 'standby ' || pg_catalog.pg_postmaster_start_time()::text
                else 'primary ' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8) end,
        'UTF8')), 1, 8)
    from pg_catalog.pg_control_system() s, pg_catalog.pg_database d, streamseal.feed_store f
    where d.datname = pg_catalog.current_database());
end
$$;

-- _feed_in_scope says whether an event of (tenant, event_type) belongs to the scope. The reads a
-- feed makes on every call (_feed_members, _feed_lane_bound, read_feed) write the same test
-- inline: a function with a SET clause is never inlined, and its statement was planned again in
-- every transaction that called it.
create function streamseal._feed_in_scope(event_types text[], tenants text[], tenant text, event_type text)
returns boolean
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select (_feed_in_scope.event_types is null or _feed_in_scope.event_type = any (_feed_in_scope.event_types))
       and (_feed_in_scope.tenants is null or _feed_in_scope.tenant = any (_feed_in_scope.tenants))
$$;

-- _feed_own_through is how far the own lane is certified: the stamper's last origin_seq. With
-- _feed_own_rows, the one place the feed reads own events' numbers (own_events: issue 16 keeps
-- them in own_numbers).
create function streamseal._feed_own_through()
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$ select s.last_origin_seq from streamseal.stamp_state s $$;

-- _feed_own_rows returns up to max_events own events in scope with after_seq < origin_seq <=
-- through, in origin_seq order.
create function streamseal._feed_own_rows(after_seq bigint, through bigint, event_types text[], tenants text[],
                                          max_events integer)
returns setof streamseal._feed_row
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
           e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at
    -- Walks own_numbers by its key and probes events only for rows in scope (_own_lane_after):
    -- O(page) whatever the statistics say.
    from streamseal._own_lane_after(_feed_own_rows.after_seq, _feed_own_rows.through,
                                    _feed_own_rows.event_types, _feed_own_rows.tenants, _feed_own_rows.max_events) e
$$;

-- _feed_members: the origins this store holds in scope and their generations: this service when
-- it stamped an event in scope, and every origin with a lane in scope.
create function streamseal._feed_members(event_types text[], tenants text[])
returns table (origin text, generation bigint)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    return query
    select m.origin, m.generation
    from (
        -- (origin_generation() read directly: a SQL function outside a loop is planned per call.)
        select streamseal.service_name() as origin, (select g.generation from streamseal.origin_generation g) as generation
        where exists (select from streamseal.type_seq_counters c
                      where (_feed_members.event_types is null or c.event_type = any (_feed_members.event_types))
                        and (_feed_members.tenants is null or c.tenant = any (_feed_members.tenants)))
        union
        select l.origin, coalesce(k.generation, 0)
        from streamseal.lanes l
        left join streamseal.known_origins k on k.origin = l.origin
        where (_feed_members.event_types is null or l.event_type = any (_feed_members.event_types))
          and (_feed_members.tenants is null or l.tenant = any (_feed_members.tenants))
    ) m
    order by m.origin;
end
$$;

-- _feed_lane_bound certifies a copied origin: the lowest, over its lanes in scope, of what each
-- lane certifies, capped at the origin's lane-set mark (known_origins.lanes_announced_through,
-- lane_rounds.sql: every event below it, of a pair this store subscribes to, was announced to its
-- lane, so a pair whose first events were all lost has a lane there before the bound passes
-- them). A lane certifies one past the origin_seq of the highest event held at or below its
-- floor (a lane's floor never passes a hole, invariant 6, and within a lane type_seq and
-- origin_seq rise together, so a hole above the floor lies above that origin_seq); a lane whose
-- floor reached the last type_seq announced to it holds everything of its pair below the mark,
-- and certifies the mark (a quiet lane no longer pins its origin at its last event). Without a
-- mark (no listed beat of the origin recorded yet: an older binary) the lanes alone, as before.
-- Null when the origin has no lane in scope.
create function streamseal._feed_lane_bound(origin text, event_types text[], tenants text[])
returns bigint
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select case when pg_catalog.count(l.origin) > 0 then least(m.mark, pg_catalog.min(
        case when m.mark is not null and l.floor >= l.last_type_seq then m.mark
             else 1 + coalesce((
                 select e.origin_seq
                 from streamseal.events e
                 where e.origin = l.origin and e.tenant = l.tenant and e.event_type = l.event_type
                   and e.type_seq is not null and e.type_seq <= l.floor
                 order by e.type_seq desc
                 limit 1), 0) end)) end
    from (select (select k.lanes_announced_through from streamseal.known_origins k
                  where k.origin = _feed_lane_bound.origin) as mark) m
    left join streamseal.lanes l
      on l.origin = _feed_lane_bound.origin
     and (_feed_lane_bound.event_types is null or l.event_type = any (_feed_lane_bound.event_types))
     and (_feed_lane_bound.tenants is null or l.tenant = any (_feed_lane_bound.tenants))
    group by m.mark
$$;

-- _feed_members_merge carries a token's members into this read: each member held here now at its
-- generation here, a member the token names and this store no longer lists kept as the token has
-- it, a new member at boundary 1; sorted by name.
create function streamseal._feed_members_merge(token_members text[], token_generations bigint[], token_boundaries bigint[],
                                               event_types text[], tenants text[],
                                               out members text[], out generations bigint[], out boundaries bigint[])
language plpgsql
stable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
begin
    select coalesce(pg_catalog.array_agg(u.m order by u.m), '{}'), coalesce(pg_catalog.array_agg(u.g order by u.m), '{}'),
           coalesce(pg_catalog.array_agg(u.b order by u.m), '{}')
    into _feed_members_merge.members, _feed_members_merge.generations, _feed_members_merge.boundaries
    from (
        select coalesce(now_.origin, tok.origin) as m, coalesce(now_.generation, tok.generation) as g,
               coalesce(tok.boundary, 1) as b
        from rows from (pg_catalog.unnest(_feed_members_merge.token_members), pg_catalog.unnest(_feed_members_merge.token_generations),
                        pg_catalog.unnest(_feed_members_merge.token_boundaries)) tok(origin, generation, boundary)
        full join streamseal._feed_members(_feed_members_merge.event_types, _feed_members_merge.tenants) now_ on now_.origin = tok.origin
    ) u;
end
$$;

-- _feed_horizon: copies that landed below it are committed and visible to this statement's
-- snapshot, and no row can later commit below it. It is the lowest xid still in progress in the
-- snapshot, skipping the ones that pg_stat_activity places in ANOTHER database (they cannot land
-- a row here: a long transaction elsewhere in the cluster holds nothing back), and the
-- snapshot's xmax when none is left. Only a positive sighting exempts an xid: one that ended
-- before pg_stat_activity was read, a prepared transaction or a stale statistics snapshot
-- keeps it in, which only holds rows back a little longer, never lets one be skipped.
create function streamseal._feed_horizon()
returns xid8
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    snap pg_snapshot := pg_catalog.pg_current_snapshot();
    lowest xid8;
begin
    -- Nothing in progress (the usual case): the snapshot's xmax, without reading the
    -- statistics (planning pg_stat_activity was most of a small read's cost, bench feed).
    if pg_catalog.pg_snapshot_xmin(snap) = pg_catalog.pg_snapshot_xmax(snap) then
        return pg_catalog.pg_snapshot_xmax(snap);
    end if;
    select pg_catalog.min(x.xid) into lowest
    from pg_catalog.pg_snapshot_xip(snap) x(xid)
    where not exists (
        select from pg_catalog.pg_stat_get_activity(null) a
        where a.backend_xid = pg_catalog.xid(x.xid)
          and a.datid is not null
          and a.datid <> (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database()));
    return coalesce(lowest, pg_catalog.pg_snapshot_xmax(snap));
end
$$;

-- _feed_retention_problem says why this store cannot replay origin from boundary (null: it
-- can): a lane in scope whose lowest held event is not its first and lies above the boundary
-- (history below it was never held here, or was reaped or closed).
create function streamseal._feed_retention_problem(origin text, boundary bigint, event_types text[], tenants text[])
returns text
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.format('origin "%s": this store holds tenant %s type %s only from origin_seq %s (type_seq %s), above the token''s boundary %s',
                             _feed_retention_problem.origin, pg_catalog.quote_literal(l.tenant),
                             pg_catalog.quote_literal(l.event_type), coalesce(f.origin_seq::text, 'none'),
                             coalesce(f.type_seq::text, 'none'), _feed_retention_problem.boundary)
    from streamseal.lanes l
    left join lateral (
        select e.origin_seq, e.type_seq
        from streamseal.events e
        where e.origin = l.origin and e.tenant = l.tenant and e.event_type = l.event_type and e.type_seq is not null
        order by e.type_seq
        limit 1) f on true
    where l.origin = _feed_retention_problem.origin
      and streamseal._feed_in_scope(_feed_retention_problem.event_types, _feed_retention_problem.tenants, l.tenant, l.event_type)
      and ((f.type_seq is null and l.floor > 0)
           or (f.type_seq > 1 and f.origin_seq > _feed_retention_problem.boundary))
    order by l.tenant, l.event_type
    limit 1
$$;

-- _feed_token_encode builds a token (layout in this file's header). store_id null: no local part.
create function streamseal._feed_token_encode(
    scope_digest bytea, members text[], generations bigint[], boundaries bigint[], store_id bytea,
    own_position bigint, copies_xid bigint, copies_local_id bigint, live_start_xid bigint,
    replay_origins text[], replay_next bigint[])
returns text
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
declare
    body bytea;
    i integer;
begin
    body := '\x01'::bytea || (case when _feed_token_encode.store_id is null then '\x00' else '\x01' end)::bytea
            || _feed_token_encode.scope_digest
            || streamseal._feed_membership_digest(_feed_token_encode.members, _feed_token_encode.generations)
            || pg_catalog.int2send(coalesce(pg_catalog.cardinality(_feed_token_encode.members), 0)::smallint);
    for i in 1 .. coalesce(pg_catalog.cardinality(_feed_token_encode.members), 0) loop
        body := body || pg_catalog.set_byte('\x00'::bytea, 0, pg_catalog.octet_length(_feed_token_encode.members[i]))
                || pg_catalog.convert_to(_feed_token_encode.members[i], 'UTF8')
                || pg_catalog.int8send(_feed_token_encode.generations[i])
                || pg_catalog.int8send(_feed_token_encode.boundaries[i]);
    end loop;
    if _feed_token_encode.store_id is not null then
        body := body || _feed_token_encode.store_id
                || pg_catalog.int8send(_feed_token_encode.own_position)
                || pg_catalog.int8send(_feed_token_encode.copies_xid)
                || pg_catalog.int8send(_feed_token_encode.copies_local_id)
                || pg_catalog.int8send(_feed_token_encode.live_start_xid)
                || pg_catalog.int2send(coalesce(pg_catalog.cardinality(_feed_token_encode.replay_origins), 0)::smallint);
        for i in 1 .. coalesce(pg_catalog.cardinality(_feed_token_encode.replay_origins), 0) loop
            body := body || pg_catalog.set_byte('\x00'::bytea, 0, pg_catalog.octet_length(_feed_token_encode.replay_origins[i]))
                    || pg_catalog.convert_to(_feed_token_encode.replay_origins[i], 'UTF8')
                    || pg_catalog.int8send(_feed_token_encode.replay_next[i]);
        end loop;
    end if;
    body := body || pg_catalog.substr(pg_catalog.sha256(body), 1, 8);
    return pg_catalog.rtrim(pg_catalog.translate(pg_catalog.encode(body, 'base64'), E'+/\n', '-_'), '=');
end
$$;

-- _feed_token_bytes reads n bytes at pos of a token, refusing a token too short to hold them.
create function streamseal._feed_token_bytes(raw bytea, pos integer, n integer, what text)
returns bytea
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
begin
    if _feed_token_bytes.pos + _feed_token_bytes.n - 1 > pg_catalog.octet_length(_feed_token_bytes.raw) then
        perform streamseal._feed_refuse('SS400', pg_catalog.format(
            'resume token is malformed: it ends inside its %s (byte %s of %s)', _feed_token_bytes.what,
            _feed_token_bytes.pos, pg_catalog.octet_length(_feed_token_bytes.raw)));
    end if;
    return pg_catalog.substr(_feed_token_bytes.raw, _feed_token_bytes.pos, _feed_token_bytes.n);
end
$$;

-- _feed_token_int reads a big-endian integer of 2 or 8 bytes.
create function streamseal._feed_token_int(raw bytea, pos integer, n integer, what text)
returns bigint
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
    select case _feed_token_int.n
        when 2 then ('x' || pg_catalog.encode(streamseal._feed_token_bytes(_feed_token_int.raw, _feed_token_int.pos, 2, _feed_token_int.what), 'hex'))::bit(16)::integer::bigint
        else ('x' || pg_catalog.encode(streamseal._feed_token_bytes(_feed_token_int.raw, _feed_token_int.pos, 8, _feed_token_int.what), 'hex'))::bit(64)::bigint
    end
$$;

-- _feed_token_name reads a length-prefixed origin name at pos; returns it and the next pos.
create function streamseal._feed_token_name(raw bytea, pos integer, what text, out name text, out next_pos integer)
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
    len integer;
begin
    len := pg_catalog.get_byte(streamseal._feed_token_bytes(_feed_token_name.raw, _feed_token_name.pos, 1, _feed_token_name.what), 0);
    begin
        name := pg_catalog.convert_from(streamseal._feed_token_bytes(_feed_token_name.raw, _feed_token_name.pos + 1, len, _feed_token_name.what), 'UTF8');
    exception when character_not_in_repertoire or untranslatable_character then
        name := null;
    end;
    if name is null or name !~ '^[a-z][a-z0-9-]{0,62}$' then
        perform streamseal._feed_refuse('SS400', pg_catalog.format(
            'resume token is malformed: its %s at byte %s is not a service name', _feed_token_name.what, _feed_token_name.pos));
    end if;
    next_pos := _feed_token_name.pos + 1 + len;
end
$$;

-- feed_token decodes a resume token, refusing (SS400) one that is not exactly what an encoder
-- of version 1 wrote: not base64url, damaged (checksum), another version, unknown flags, a
-- name that is not a service name, names out of order, a boundary below 1, trailing bytes.
-- Operators read a token with it; read_feed decodes every token through it.
create function streamseal.feed_token(token text)
returns streamseal._feed_token
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = auto
as $$
declare
    raw bytea;
    padded text;
    t streamseal._feed_token;
    flags integer;
    n integer;
    pos integer;
    i integer;
    part record;
    len integer;
    member_name text;
    name_len integer;
begin
    if feed_token.token is null or feed_token.token = '' then
        perform streamseal._feed_refuse('SS400', 'resume token is empty: pass null to start from the beginning');
    end if;
    if pg_catalog.length(feed_token.token) > 65536 or feed_token.token !~ '^[A-Za-z0-9_-]+$' then
        perform streamseal._feed_refuse('SS400', 'resume token is malformed: expected base64url (A-Z a-z 0-9 - _), at most 65536 characters');
    end if;
    if pg_catalog.length(feed_token.token) % 4 = 1 then
        perform streamseal._feed_refuse('SS400', 'resume token is malformed: its length is not one base64url can have (truncated?)');
    end if;
    padded := pg_catalog.translate(feed_token.token, '-_', '+/')
              || pg_catalog.repeat('=', (4 - pg_catalog.length(feed_token.token) % 4) % 4);
    raw := pg_catalog.decode(padded, 'base64');
    if pg_catalog.octet_length(raw) < 30 then
        perform streamseal._feed_refuse('SS400', pg_catalog.format(
            'resume token is malformed: %s bytes is shorter than any token (truncated?)', pg_catalog.octet_length(raw)));
    end if;
    if pg_catalog.substr(pg_catalog.sha256(pg_catalog.substr(raw, 1, pg_catalog.octet_length(raw) - 8)), 1, 8)
       <> pg_catalog.substr(raw, pg_catalog.octet_length(raw) - 7, 8) then
        perform streamseal._feed_refuse('SS400', 'resume token is damaged: its checksum does not match (truncated or altered in transit)');
    end if;
    raw := pg_catalog.substr(raw, 1, pg_catalog.octet_length(raw) - 8);
    t.version := pg_catalog.get_byte(raw, 0);
    if t.version <> 1 then
        perform streamseal._feed_refuse('SS400', pg_catalog.format(
            'resume token version %s is not supported: this store reads version 1 (a newer streamseal wrote it?)', t.version));
    end if;
    flags := pg_catalog.get_byte(raw, 1);
    if flags & ~1 <> 0 then
        perform streamseal._feed_refuse('SS400', pg_catalog.format('resume token is malformed: unknown flags %s', flags));
    end if;
    t.scope_digest := pg_catalog.substr(raw, 3, 8);
    t.membership_digest := pg_catalog.substr(raw, 11, 8);
    -- Fields are read inline while the token is long enough and each name is plain ASCII of a
    -- service name; otherwise through the _feed_token_* helpers, which raise the exact refusal.
    -- (A helper call per field was most of a read's token cost: ~0.6 ms a token under load.)
    len := pg_catalog.octet_length(raw);
    n := pg_catalog.get_byte(raw, 18) * 256 + pg_catalog.get_byte(raw, 19);
    pos := 21;
    t.members := '{}'; t.generations := '{}'; t.boundaries := '{}';
    for i in 1 .. n loop
        member_name := null;
        if pos <= len then
            name_len := pg_catalog.get_byte(raw, pos - 1);
            if pos + name_len + 16 <= len then
                member_name := pg_catalog.encode(pg_catalog.substr(raw, pos + 1, name_len), 'escape');
                if member_name !~ '^[a-z][a-z0-9-]{0,62}$' then
                    member_name := null;
                end if;
            end if;
        end if;
        if member_name is null then
            select * into part from streamseal._feed_token_name(raw, pos, 'member name');
            member_name := part.name;
            name_len := part.next_pos - pos - 1;
            perform streamseal._feed_token_int(raw, part.next_pos, 8, 'generation');
            perform streamseal._feed_token_int(raw, part.next_pos + 8, 8, 'boundary');
        end if;
        if i > 1 and member_name <= t.members[i - 1] then
            perform streamseal._feed_refuse('SS400', 'resume token is malformed: its members are not in strict name order');
        end if;
        pos := pos + 1 + name_len;
        t.members := t.members || member_name;
        t.generations := t.generations || ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos, 8), 'hex'))::bit(64)::bigint;
        t.boundaries := t.boundaries || ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos + 8, 8), 'hex'))::bit(64)::bigint;
        if t.generations[i] < 0 or t.boundaries[i] < 1 then
            perform streamseal._feed_refuse('SS400', pg_catalog.format(
                'resume token is malformed: origin "%s" has generation %s and boundary %s: expected >= 0 and >= 1',
                member_name, t.generations[i], t.boundaries[i]));
        end if;
        pos := pos + 16;
    end loop;
    if streamseal._feed_membership_digest(t.members, t.generations) <> t.membership_digest then
        perform streamseal._feed_refuse('SS400', 'resume token is malformed: its membership digest does not match its members');
    end if;
    if flags & 1 = 1 then
        if pos + 41 > len then
            -- Too short for the local part: the helpers name the field it ends in.
            perform streamseal._feed_token_bytes(raw, pos, 8, 'store id');
            perform streamseal._feed_token_int(raw, pos + 8, 8, 'own position');
            perform streamseal._feed_token_int(raw, pos + 16, 8, 'copies position');
            perform streamseal._feed_token_int(raw, pos + 24, 8, 'copies position');
            perform streamseal._feed_token_int(raw, pos + 32, 8, 'live start');
            perform streamseal._feed_token_int(raw, pos + 40, 2, 'replay count');
        end if;
        t.store_id := pg_catalog.substr(raw, pos, 8);
        t.own_position := ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos + 8, 8), 'hex'))::bit(64)::bigint;
        t.copies_xid := ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos + 16, 8), 'hex'))::bit(64)::bigint;
        t.copies_local_id := ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos + 24, 8), 'hex'))::bit(64)::bigint;
        t.live_start_xid := ('x' || pg_catalog.encode(pg_catalog.substr(raw, pos + 32, 8), 'hex'))::bit(64)::bigint;
        n := pg_catalog.get_byte(raw, pos + 39) * 256 + pg_catalog.get_byte(raw, pos + 40);
        pos := pos + 42;
        t.replay_origins := '{}'; t.replay_next := '{}';
        for i in 1 .. n loop
            select * into part from streamseal._feed_token_name(raw, pos, 'replay origin');
            t.replay_origins := t.replay_origins || part.name;
            t.replay_next := t.replay_next || streamseal._feed_token_int(raw, part.next_pos, 8, 'replay position');
            pos := part.next_pos + 8;
        end loop;
        if t.own_position < 0 or t.copies_xid < -1 or t.copies_local_id < 0 or t.live_start_xid < 0
           or exists (select from pg_catalog.unnest(t.replay_next) r(n) where r.n < 1) then
            perform streamseal._feed_refuse('SS400', 'resume token is malformed: a negative position in its local part');
        end if;
    end if;
    if pos <> pg_catalog.octet_length(raw) + 1 then
        perform streamseal._feed_refuse('SS400', pg_catalog.format(
            'resume token is malformed: %s bytes follow its last field', pg_catalog.octet_length(raw) + 1 - pos));
    end if;
    return t;
end
$$;

-- read_feed returns up to max_events events of the scope (event_types, tenants: null means all)
-- that follow token (null: from the beginning of this store), then one last row whose event
-- columns are null and whose next_token resumes after the batch; its held_copies counts copies
-- committed but not yet readable (behind an open transaction, read in a later snapshot than the
-- batch): when it is not 0, read again soon, for no NOTIFY announces that transaction's end. At least once: a token is a
-- place to start again, and reading again from it repeats at most the batch after it.
--   * Order: own events by origin_seq; copies in commit order (landed_xid, local_id), below the
--     snapshot's xmin, so a late lower-key commit is read after it commits, never skipped.
--     Repairs and backfill are copies: they come when they land, whatever their origin_seq.
--   * Token from this database (its local part's store id matches): the reader continues from
--     its position; boundaries only ever rise, to certified values: own = the position (never
--     past the stamper); copied origin = the lowest of its lanes' certified bound and the lowest
--     origin_seq it holds that the reader has not yet been handed (computed once the reader has
--     caught up with the copies; a reader behind keeps the boundaries it had).
--   * Token from elsewhere (another replica, a restored database, another service's copy):
--     admission. Another scope: SS400. A member origin at another generation, or this service's
--     own boundary ahead of its stamper: SS409. A member origin this store does not hold in
--     scope, or whose history below the boundary is not held here: SS410. Admitted: each copied
--     origin's rows are replayed by origin_seq from its boundary (1 for an origin the token does
--     not name), then the live feed continues from the snapshot's xmin at admission; the own
--     lane continues from its boundary. Duplicates possible, skips never (invariant 15).
create function streamseal.read_feed(event_types text[], tenants text[], token text, max_events integer default 500)
returns table (event_id uuid, origin text, origin_seq bigint, type_seq bigint, tenant text, stream_id text,
               stream_version bigint, event_type text, flags integer, payload bytea, metadata jsonb,
               occurred_at timestamptz, stored_at timestamptz, next_token text, held_copies bigint)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
set jit = off
set plan_cache_mode = force_custom_plan
as $$
declare
    self text := streamseal.service_name();
    scope bytea;
    here_id bytea := streamseal._feed_store_id();
    t streamseal._feed_token;
    members text[];
    generations bigint[];
    boundaries bigint[];
    own_position bigint := 0;
    copies_xid bigint := -1;
    copies_local_id bigint := 0;
    live_start bigint := 0;
    replay_origins text[] := '{}';
    replay_next bigint[] := '{}';
    remaining integer := read_feed.max_events;
    batch streamseal._feed_row[];
    rows_all streamseal._feed_row[] := '{}';
    got integer;
    horizon xid8;
    through bigint;
    i integer;
    k integer;
    problem text;
    here record;
    caught_up boolean := false;
    held bigint := 0;
    own_limit integer;
    last_xid xid8;
    last_local_id bigint;
    copies_from_xid xid8;
    copies_from_local_id bigint;
    copies_to_xid xid8;
    copies_to_local_id bigint;
    copies_count integer;
begin
    perform streamseal._feed_require_scope(read_feed.event_types, read_feed.tenants, read_feed.max_events);
    scope := streamseal._feed_scope_digest(read_feed.event_types, read_feed.tenants);

    if read_feed.token is null then
        -- From the beginning of this store: every member starts at 1.
        select coalesce(pg_catalog.array_agg(m.origin order by m.origin), '{}'),
               coalesce(pg_catalog.array_agg(m.generation order by m.origin), '{}')
        into members, generations
        from streamseal._feed_members(read_feed.event_types, read_feed.tenants) m;
        boundaries := pg_catalog.array_fill(1::bigint, array[pg_catalog.cardinality(members)]);
    else
        t := streamseal.feed_token(read_feed.token);
        if t.scope_digest <> scope then
            perform streamseal._feed_refuse('SS400',
                'resume token was issued for another scope (event types and tenants): read with the scope it was issued for, or start without a token');
        end if;
        members := t.members; generations := t.generations; boundaries := t.boundaries;
        if t.store_id is not null and t.store_id = here_id then
            -- GUARD: continuing in this database: its position is ours.
            own_position := t.own_position;
            copies_xid := t.copies_xid;
            copies_local_id := t.copies_local_id;
            live_start := t.live_start_xid;
            replay_origins := t.replay_origins;
            replay_next := t.replay_next;
        else
            -- GUARD: admission. Every member of the token must be served here, at its generation.
            for i in 1 .. pg_catalog.cardinality(members) loop
                select m.origin, m.generation into here
                from streamseal._feed_members(read_feed.event_types, read_feed.tenants) m
                where m.origin = members[i];
                if members[i] = self then
                    if streamseal.origin_generation() <> generations[i] then
                        perform streamseal._feed_refuse('SS409', pg_catalog.format(
                            'origin "%s" (this service) is at generation %s here, the token at %s: its history changed since the token was issued; start without a token (read everything again)',
                            members[i], streamseal.origin_generation(), generations[i]));
                    end if;
                    through := streamseal._feed_own_through();
                    if boundaries[i] - 1 > through then
                        perform streamseal._feed_refuse('SS409', pg_catalog.format(
                            'origin "%s" (this service): the token''s boundary %s is ahead of this store, which numbered its events only through %s (a restored or failed-over database that lost transactions?); start without a token',
                            members[i], boundaries[i], through));
                    end if;
                    own_position := boundaries[i] - 1;
                    continue;
                end if;
                if here.origin is null then
                    perform streamseal._feed_refuse('SS410', pg_catalog.format(
                        'origin "%s" is not held in this scope here: resume on a store that consumes it, or start without a token',
                        members[i]));
                end if;
                if here.generation <> generations[i] then
                    perform streamseal._feed_refuse('SS409', pg_catalog.format(
                        'origin "%s" is at generation %s here, the token at %s: its history changed (or this store has not heard yet); retry once the stores agree, or start without a token',
                        members[i], here.generation, generations[i]));
                end if;
                problem := streamseal._feed_retention_problem(members[i], boundaries[i], read_feed.event_types, read_feed.tenants);
                if problem is not null then
                    perform streamseal._feed_refuse('SS410', problem
                        || ': the history the token needs is gone here; resume on a store that holds it, or start without a token');
                end if;
            end loop;
            -- Members here the token does not name start at 1.
            for here in select m.origin, m.generation from streamseal._feed_members(read_feed.event_types, read_feed.tenants) m
                        where not (m.origin = any (members)) loop
                members := members || here.origin; generations := generations || here.generation;
                boundaries := boundaries || 1::bigint;
            end loop;
            select pg_catalog.array_agg(u.m order by u.m), pg_catalog.array_agg(u.g order by u.m), pg_catalog.array_agg(u.b order by u.m)
            into members, generations, boundaries
            from rows from (pg_catalog.unnest(members), pg_catalog.unnest(generations), pg_catalog.unnest(boundaries)) u(m, g, b);
            members := coalesce(members, '{}'); generations := coalesce(generations, '{}'); boundaries := coalesce(boundaries, '{}');
            -- Replay every copied origin held here (a loose index scan), from its boundary.
            live_start := streamseal._feed_horizon()::text::bigint;
            copies_xid := live_start;
            copies_local_id := 0;
            with recursive o as (
                (select e.origin from streamseal.events e where e.origin_seq is not null order by e.origin limit 1)
                union all
                select (select e.origin from streamseal.events e where e.origin > o.origin and e.origin_seq is not null
                        order by e.origin limit 1)
                from o where o.origin is not null
            )
            select coalesce(pg_catalog.array_agg(o.origin order by o.origin), '{}'),
                   coalesce(pg_catalog.array_agg(coalesce(b.boundary, 1) order by o.origin), '{}')
            into replay_origins, replay_next
            from o
            left join rows from (pg_catalog.unnest(members), pg_catalog.unnest(boundaries)) b(origin, boundary) on b.origin = o.origin
            where o.origin is not null and o.origin <> self;
            if pg_catalog.cardinality(replay_origins) = 0 then
                live_start := 0;
            end if;
        end if;
    end if;

    -- Replay (after an admission): each copied origin by origin_seq from its cursor, rows that
    -- landed before the live start only (later ones come live).
    while live_start <> 0 and remaining > 0 loop
        if pg_catalog.cardinality(replay_origins) = 0 then
            live_start := 0;
            exit;
        end if;
        select pg_catalog.array_agg(row(e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version,
                   e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at)::streamseal._feed_row order by e.origin_seq)
        into batch
        from (select e.* from streamseal.events e
              where e.origin = replay_origins[1] and e.origin_seq >= replay_next[1]
                and (e.landed_xid is null or e.landed_xid < live_start::text::xid8)
                and (read_feed.event_types is null or e.event_type = any (read_feed.event_types))
                  and (read_feed.tenants is null or e.tenant = any (read_feed.tenants))
              order by e.origin_seq
              limit remaining) e;
        got := coalesce(pg_catalog.cardinality(batch), 0);
        rows_all := rows_all || coalesce(batch, '{}');
        remaining := remaining - got;
        if remaining = 0 then
            replay_next[1] := batch[got].origin_seq + 1;
        else
            replay_origins := replay_origins[2:];
            replay_next := replay_next[2:];
        end if;
    end loop;

    if live_start = 0 then
        -- Own events, up to half the batch when copies wait too, by origin_seq up to the stamper.
        through := streamseal._feed_own_through();
        if through > own_position then
            own_limit := greatest(remaining / 2, 1);
            select pg_catalog.array_agg(r order by r.origin_seq) into batch
            from streamseal._feed_own_rows(own_position, through, read_feed.event_types, read_feed.tenants, own_limit) r;
            got := coalesce(pg_catalog.cardinality(batch), 0);
            rows_all := rows_all || coalesce(batch, '{}');
            remaining := remaining - got;
            own_position := case when got = own_limit then batch[got].origin_seq else through end;
        end if;

        -- Copies that landed before this feed (null landed_xid), by local_id, first.
        if copies_xid = -1 and remaining > 0 then
            select pg_catalog.array_agg(row(e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version,
                       e.event_type, e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at)::streamseal._feed_row order by e.local_id),
                   pg_catalog.max(e.local_id)
            into batch, k
            from (select e.* from streamseal.events e
                  where e.landed_xid is null and e.origin_seq is not null and e.origin <> self
                    and e.local_id > copies_local_id
                    and (read_feed.event_types is null or e.event_type = any (read_feed.event_types))
                  and (read_feed.tenants is null or e.tenant = any (read_feed.tenants))
                  order by e.local_id
                  limit remaining) e;
            got := coalesce(pg_catalog.cardinality(batch), 0);
            rows_all := rows_all || coalesce(batch, '{}');
            if got = remaining then
                copies_local_id := k;
            else
                copies_xid := 0;
                copies_local_id := 0;
            end if;
            remaining := remaining - got;
        end if;

        -- Copies in commit order, below the horizon. The horizon first: every xid below it had
        -- ended at its snapshot, and no xid below it can start later, so every later statement
        -- finds the same rows below it. Then the batch's last key: the row at position
        -- `remaining` (a full batch), or none (fewer are left: everything below the horizon is
        -- the batch). The rows themselves go straight to the output at the end
        -- (copies_from..copies_to, below the horizon), never through an array: building,
        -- appending and unnesting an array of rows cost half the read (bench feed at 1M). (The
        -- count, the last key and the horizon as one statement of three CTEs cost more to plan,
        -- under the forced custom plans, than the keys cost to read: ~0.3 ms a read.)
        if copies_xid >= 0 and remaining > 0 then
            horizon := streamseal._feed_horizon();
            select e.landed_xid, e.local_id into last_xid, last_local_id
            from streamseal.events e
            where e.origin_seq is not null and e.landed_xid is not null
              and (e.landed_xid, e.local_id) > (copies_xid::text::xid8, copies_local_id)
              and e.landed_xid < horizon
              and e.origin <> self
              and (read_feed.event_types is null or e.event_type = any (read_feed.event_types))
              and (read_feed.tenants is null or e.tenant = any (read_feed.tenants))
            order by e.landed_xid, e.local_id
            offset remaining - 1
            limit 1;
            copies_from_xid := copies_xid::text::xid8;
            copies_from_local_id := copies_local_id;
            copies_count := remaining;
            if found then
                -- A full batch: continue after its last row.
                copies_to_xid := last_xid;
                copies_to_local_id := last_local_id;
                copies_xid := last_xid::text::bigint;
                copies_local_id := last_local_id;
            else
                -- Everything below the horizon is taken (none, or fewer than remaining).
                copies_to_xid := horizon;
                copies_to_local_id := 0;
                caught_up := true;
                copies_xid := greatest(copies_xid, horizon::text::bigint);
                copies_local_id := case when copies_xid = horizon::text::bigint then 0 else copies_local_id end;
            end if;
        end if;

        -- Boundaries rise to certified values. Own: the position. Copied origins: once caught
        -- up, the lowest of the lanes' bound and the lowest origin_seq held but not yet handed
        -- out (rows at or above the horizon), read in one snapshot.
        -- (In helpers with plans kept for the session: read_feed forces custom plans for its range
        -- reads, and planning these on every read was a tenth of a run_handler batch's feed cost.)
        select x.members, x.generations, x.boundaries into members, generations, boundaries
        from streamseal._feed_members_merge(members, generations, boundaries, read_feed.event_types, read_feed.tenants) x;
        if caught_up then
            with unread as materialized (
                select e.origin, e.origin_seq
                from streamseal.events e
                where e.origin_seq is not null and e.landed_xid is not null
                  and (e.landed_xid, e.local_id) > (copies_xid::text::xid8, copies_local_id)
                  and e.origin <> self
                  and (read_feed.event_types is null or e.event_type = any (read_feed.event_types))
                  and (read_feed.tenants is null or e.tenant = any (read_feed.tenants))
                limit 10001
            ), lowest as (
                select u.origin, pg_catalog.min(u.origin_seq) as origin_seq from unread u group by u.origin
            )
            select pg_catalog.array_agg(case
                       when b.origin = self then greatest(b.boundary, own_position + 1)
                       when (select pg_catalog.count(*) from unread) > 10000 then b.boundary
                       else greatest(b.boundary, least(
                           streamseal._feed_lane_bound(b.origin, read_feed.event_types, read_feed.tenants),
                           (select l.origin_seq from lowest l where l.origin = b.origin)))
                   end order by b.origin),
                   (select pg_catalog.count(*) from unread)
            into boundaries, held
            from rows from (pg_catalog.unnest(members), pg_catalog.unnest(boundaries)) b(origin, boundary);
            boundaries := coalesce(boundaries, '{}');
        else
            for i in 1 .. pg_catalog.cardinality(members) loop
                if members[i] = self then
                    boundaries[i] := greatest(boundaries[i], own_position + 1);
                end if;
            end loop;
        end if;
    end if;

    -- The scope test is written inline above: a function with a SET clause is never inlined,
    -- and a call per row cost a fifth of the read (bench feed).
    if pg_catalog.cardinality(rows_all) > 0 then
        return query
        select u.event_id, u.origin, u.origin_seq, u.type_seq, u.tenant, u.stream_id, u.stream_version, u.event_type,
               u.flags, u.payload, u.metadata, u.occurred_at, u.stored_at, null::text, null::bigint
        from pg_catalog.unnest(rows_all) u;
    end if;
    if copies_to_xid is not null then
        return query
        select e.event_id, e.origin, e.origin_seq, e.type_seq, e.tenant, e.stream_id, e.stream_version, e.event_type,
               e.flags, e.payload, e.metadata, e.occurred_at, e.stored_at, null::text, null::bigint
        from streamseal.events e
        where e.origin_seq is not null and e.landed_xid is not null
          and (e.landed_xid, e.local_id) > (copies_from_xid, copies_from_local_id)
          and (e.landed_xid, e.local_id) <= (copies_to_xid, copies_to_local_id)
          and e.landed_xid < horizon
          and e.origin <> self
          and (read_feed.event_types is null or e.event_type = any (read_feed.event_types))
          and (read_feed.tenants is null or e.tenant = any (read_feed.tenants))
        order by e.landed_xid, e.local_id
        -- The limit ends the scan: a row comparison's upper bound does not stop a btree scan
        -- (it read the rest of the index: 4 000 pages for 5 000 rows at 1M).
        limit copies_count;
    end if;
    -- The last row: event columns null (never assigned), the token and the held count.
    next_token := streamseal._feed_token_encode(scope, members, generations, boundaries, here_id, own_position,
        copies_xid, copies_local_id, live_start, replay_origins, replay_next);
    held_copies := held;
    return next;
end
$$;

-- feed_horizon: what holds the copies' delivery back, for the metrics and `streamseal status`:
-- committed copies the horizon withholds (_feed_horizon) and the age of the oldest transaction
-- of this database holding it.
create function streamseal.feed_horizon(out held_copies bigint, out oldest_xact_seconds double precision)
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
    select (select pg_catalog.count(*) from streamseal.events e
            where e.origin_seq is not null and e.landed_xid >= streamseal._feed_horizon()
              and e.origin <> streamseal.service_name()),
           (select pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - pg_catalog.min(a.xact_start))
            from pg_catalog.pg_stat_activity a
            where a.backend_xid is not null
              and (a.datid is null or a.datid = (select d.oid from pg_catalog.pg_database d where d.datname = pg_catalog.current_database())))
$$;
