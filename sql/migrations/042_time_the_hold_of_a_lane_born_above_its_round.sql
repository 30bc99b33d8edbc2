-- Time the hold of a listed pair whose lane was born above its round's window (issue 17's
-- remaining certification gap; DESIGN.md invariant 15).
--
-- Why: a pair's checkpoint [1, 10] (round R1) whose recording failed is nak'd and redelivered by
-- the broker later, while [11, 20] (R2) is recorded and verified first and births the lane at 10.
-- checkpoint_inbox holds no trace of R1, so the pending rule (migration 040) held nothing and the
-- mark passed type_seqs 1..10 that no checkpoint had checked yet. A pair whose lane exists but
-- whose birth_floor lies at or above the pair's last is now held until the birth lowers (R1
-- verified late) or the broker can no longer deliver R1 (lane_rounds.sql, _lane_rounds_hold):
-- held_since is the database's now() when the store first saw the pair held.
-- Null: not held. Pairs held before this migration are timed from the upgrade.
alter table streamseal.lane_round_pairs
    add column held_since timestamptz;

update streamseal.lane_round_pairs set held_since = now() where held;

---- create above / drop below ----

alter table streamseal.lane_round_pairs drop column held_since;
