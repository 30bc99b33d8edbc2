-- Reserved: migration 040 belongs to another helper's branch (proj3 or cert, this session).
-- This no-op keeps tern's numbering contiguous on the bf5 branch alone; DELETE THIS FILE
-- when merging, in favour of the real 040.
select 1;

---- create above / drop below ----

select 1;
