-- Lane-set marks: how far a consumer knows every lane of an origin (issue 17, the token's
-- certification; DESIGN.md invariant 15).
--
-- Why: lanes are born by checkpoints, and the checkpoints of one round ride different subjects
-- and are verified at the inbox's own pace. A (tenant, type) pair whose first events were all lost
-- had no lane until its checkpoint was verified, so the feed, certifying an origin as the lowest
-- bound over the lanes that exist, could certify past those events, and a token resumed on
-- another store skipped them. Each round's beat now lists the pairs the round checkpointed with
-- their last type_seq; the consumer keeps the round until every listed pair it subscribes to has
-- a lane announced that far, and then moves the origin's mark over the round's window. The feed
-- never certifies an origin past its mark (sql/functions/lane_rounds.sql, feed.sql).

-- known_origins.lanes_announced_through: every event of the origin below it, of a pair this
-- store subscribes to, was announced to its lane (the lane exists and its last_type_seq reaches
-- the event). Null: no listed beat of the origin recorded yet (an origin on an older binary), and
-- the feed certifies it as before, by the lanes that exist.
alter table streamseal.known_origins
    add column lanes_announced_through bigint
        constraint known_origins_lanes_announced_through_is_not_negative check (lanes_announced_through >= 0);

-- lane_rounds: listed rounds of an origin not yet accounted for, named by when the origin took
-- them (a round given back and published again is another round, over a window that overlaps).
-- parts: how many beat messages carry the round's list; parts_seen: those recorded.
create table streamseal.lane_rounds (
    origin text not null
        constraint lane_rounds_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    round_at timestamptz not null,
    window_from bigint not null,
    window_to bigint not null,
    parts integer not null
        constraint lane_rounds_parts_is_positive check (parts >= 1),
    parts_seen int4multirange not null default '{}',
    primary key (origin, round_at),
    constraint lane_rounds_window_is_valid check (window_from >= 0 and window_to >= window_from)
);

-- lane_round_pairs: the listed pairs of a recorded round this store subscribes to and had not
-- seen announced that far when the round was recorded; a row leaves when its lane catches up.
create table streamseal.lane_round_pairs (
    origin text not null,
    round_at timestamptz not null,
    tenant text not null,
    event_type text not null,
    last_type_seq bigint not null
        constraint lane_round_pairs_last_type_seq_is_positive check (last_type_seq >= 1),
    primary key (origin, round_at, tenant, event_type),
    constraint lane_round_pairs_round_fk foreign key (origin, round_at)
        references streamseal.lane_rounds (origin, round_at) on delete cascade
);

-- A verified checkpoint clears the waiting pairs of its lanes by this key.
create index lane_round_pairs_by_lane on streamseal.lane_round_pairs (origin, event_type, tenant);

---- create above / drop below ----

drop table streamseal.lane_round_pairs;
drop table streamseal.lane_rounds;
alter table streamseal.known_origins drop column lanes_announced_through;
