-- The application feed (issue 17; DESIGN.md "Read side", invariant 15): every row the store takes
-- becomes readable in commit order.
--
-- Why: local_id is taken at insert, so a transaction that commits later can hold a lower local_id
-- than one a reader already passed (the late lower-key commit), and a repaired or backfilled copy
-- arrives with old origin numbers. Copies have no stamper, so each row records the transaction
-- that landed it: a reader takes copies with landed_xid below the snapshot's xmin (every
-- transaction that could still commit a row has an xid at or above it) in (landed_xid, local_id)
-- order, and past a position it never later finds a committed row below it.
--
-- The column is added without a default (no table rewrite), then given one: existing rows keep
-- null (landed before the feed; read first, by local_id). pg_current_xact_id is a builtin, never
-- a function of the code package.
alter table streamseal.events add column landed_xid xid8;
alter table streamseal.events alter column landed_xid set default pg_current_xact_id();

-- The copies reader walks this index. Partial on numbered rows: copies are always numbered, and
-- once own events' numbers move out of events (issue 16) own appends stay free of it.
create index events_landed on streamseal.events (landed_xid, local_id) where origin_seq is not null;

-- feed_store: who this database is, for the local part of a resume token (a reader's position
-- in this database's own xid and local_id space, honoured only here). A dump restored elsewhere
-- copies the row but not the cluster's system identifier or timeline, so the local part is not
-- honoured there and the token's portable boundaries are admitted instead.
create table streamseal.feed_store (
    singleton boolean primary key default true
        constraint feed_store_is_singleton check (singleton),
    incarnation uuid not null default gen_random_uuid()
);
insert into streamseal.feed_store default values;

---- create above / drop below ----

drop table streamseal.feed_store;
drop index streamseal.events_landed;
alter table streamseal.events drop column landed_xid;
