-- Reserved: migration 035 belongs to another helper's branch (feedcert, this session).
-- This no-op keeps tern's numbering contiguous on the hyg branch alone; DELETE THIS FILE
-- when merging, in favour of the real 035.
select 1;

---- create above / drop below ----

select 1;
