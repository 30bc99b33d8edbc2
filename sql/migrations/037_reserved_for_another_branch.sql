-- Reserved: migration 037 belongs to another helper's branch (proj2, this session).
-- This no-op keeps tern's numbering contiguous on the hyg branch alone; DELETE THIS FILE
-- when merging, in favour of the real 037.
select 1;

---- create above / drop below ----

select 1;
