-- Reserved: migration 042 belongs to another helper's branch (cert2 042, feedcost 043, this round).
-- This no-op keeps tern's numbering contiguous on the ingest branch alone; DELETE THIS FILE
-- when merging, in favour of the real 042 (or renumber 044 if 042 stays unused).
select 1;

---- create above / drop below ----

select 1;
