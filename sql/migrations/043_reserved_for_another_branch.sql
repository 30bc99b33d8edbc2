-- Reserved: migration 043 belongs to another helper's branch (cert2 042, feedcost 043, this round).
-- This no-op keeps tern's numbering contiguous on the ingest branch alone; DELETE THIS FILE
-- when merging, in favour of the real 043 (or renumber 044 if 043 stays unused).
select 1;

---- create above / drop below ----

select 1;
