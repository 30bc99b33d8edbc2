-- limits: the sizes append() and ingest() accept, one row. One stored event that the broker
-- cannot carry (max_payload) or an index cannot hold (row size) once halted the relay or the
-- stamper for good (invariant 13), so the door refuses it instead. A table rather than function
-- defaults so an operator can tighten or widen a limit without a release (streamseal.set_limits),
-- and `streamseal run` checks the payload limit against the connected broker at start.
-- The ranges stay within what every index can hold: three ids of 512 bytes plus an origin name
-- fit a btree row (2704 bytes) with room to spare.
create table streamseal.limits (
    singleton boolean primary key default true
        constraint limits_is_one_row check (singleton),
    max_payload_bytes integer not null default 262144
        constraint limits_max_payload_bytes_in_range check (max_payload_bytes between 1 and 67108864),
    max_id_bytes integer not null default 256
        constraint limits_max_id_bytes_in_range check (max_id_bytes between 1 and 512),
    max_metadata_bytes integer not null default 16384
        constraint limits_max_metadata_bytes_in_range check (max_metadata_bytes between 0 and 1048576)
);
insert into streamseal.limits default values;

---- create above / drop below ----

drop table streamseal.limits;
