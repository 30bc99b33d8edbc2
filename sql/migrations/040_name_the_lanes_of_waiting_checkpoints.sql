-- Name the lane of each waiting checkpoint, so a lane-set mark waits for a checkpoint it knows is
-- coming (issue 17's last certification gap; DESIGN.md invariant 15).
--
-- Why: a pair's checkpoint [1, 10] that fails verification is retried after [11, 20], which then
-- births the lane at 10; its round's waiting pair cleared (the lane was announced that far), the
-- origin's mark passed the round and the feed certified past type_seqs 1..10 that no checkpoint
-- had checked yet. The retried checkpoint is still waiting in checkpoint_inbox, so this store
-- knows it is coming: lane_rounds.sql keeps a round's pair waiting while a waiting checkpoint of
-- its lane would lower the lane's birth at or below the pair's last. To find those rows by lane
-- the inbox now records each checkpoint's (tenant, event_type). Rows recorded before this
-- migration are not described (null): they hold nothing back (they were received before the
-- rule existed and are verified within an interval or two of the upgrade).
alter table streamseal.checkpoint_inbox
    add column tenant text,
    add column event_type text;

-- A waiting checkpoint that announces a range, found by its lane and first type_seq: a
-- verification clearing its round's pairs (and a beat recording a round) probes it per pair.
create index checkpoint_inbox_by_lane on streamseal.checkpoint_inbox (origin, event_type, tenant, first_type_seq)
    where event_type is not null and first_type_seq is not null;

-- lane_round_pairs.held: the pair's lane is announced as far as its round listed, but a waiting
-- checkpoint of the lane would lower its birth at or below that (it is retried, or not verified
-- yet): the pair keeps its round waiting until that checkpoint is verified or leaves the inbox
-- (refused, given up, superseded). Held pairs are looked at again on every beat of their origin,
-- so a checkpoint that leaves without being verified holds the mark for at most one more
-- interval.
alter table streamseal.lane_round_pairs
    add column held boolean not null default false;

create index lane_round_pairs_held on streamseal.lane_round_pairs (origin) where held;

---- create above / drop below ----

drop index streamseal.lane_round_pairs_held;
alter table streamseal.lane_round_pairs drop column held;
drop index streamseal.checkpoint_inbox_by_lane;
alter table streamseal.checkpoint_inbox
    drop column tenant,
    drop column event_type;
