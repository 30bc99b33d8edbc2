-- Bound checkpoint_inbox per origin (invariant 13): the inbox acknowledges a checkpoint once it is
-- recorded here, so an origin publishing checkpoints faster than the verifier takes them (a bug,
-- or a hostile service on its own subjects: the door checks only that a checkpoint rides the
-- subject of the origin it names) grew this table without limit. streamseal.checkpoint_inbox_record
-- now records them: past the per-origin cap it first drops the rows a later row of the same lane
-- supersedes, then refuses what still does not fit. What it needs per row is kept in columns:
-- origin (the subject's; the index counts and coalesces one origin's rows), the type_seq range the
-- checkpoint announces (null on a heartbeat) and whether the row carries nothing a later
-- checkpoint of its lane does not also carry (coalescible: no at-most-once acceptances). Rows
-- recorded before this migration were not described: they are never dropped.
alter table streamseal.checkpoint_inbox
    add column origin text,
    add column first_type_seq bigint,
    add column last_type_seq bigint,
    add column coalescible boolean not null default false;

update streamseal.checkpoint_inbox set origin = split_part(subject, '.', 3);

alter table streamseal.checkpoint_inbox
    alter column origin set not null,
    add constraint checkpoint_inbox_origin_is_not_empty check (origin <> '');

create index checkpoint_inbox_origin_subject_id on streamseal.checkpoint_inbox (origin, subject, id);

-- checkpoint_inbox_load: per origin, an upper bound of its waiting rows (the rows at its last
-- count plus those recorded since; the verifier's deletes only lower the truth), so a record
-- counts an origin's rows only when the bound passes the cap, not on every run.
create table streamseal.checkpoint_inbox_load (
    origin text primary key,
    counted bigint not null default 0
        constraint checkpoint_inbox_load_counted_is_not_negative check (counted >= 0),
    recorded_since bigint not null default 0
        constraint checkpoint_inbox_load_recorded_since_is_not_negative check (recorded_since >= 0),
    -- rows recorded since the origin's rows were last coalesced whole: a record coalesces only
    -- the subjects it writes, and the whole origin once a tenth of the cap came in since.
    recorded_since_coalesced bigint not null default 0
        constraint checkpoint_inbox_load_recorded_since_coalesced_is_not_negative check (recorded_since_coalesced >= 0)
);
insert into streamseal.checkpoint_inbox_load (origin, counted, recorded_since_coalesced)
select origin, count(*), count(*) from streamseal.checkpoint_inbox group by origin;

---- create above / drop below ----

drop table streamseal.checkpoint_inbox_load;
drop index streamseal.checkpoint_inbox_origin_subject_id;
alter table streamseal.checkpoint_inbox
    drop column origin,
    drop column first_type_seq,
    drop column last_type_seq,
    drop column coalescible;
