-- Reserved: migration 033 belongs to another helper's branch (own2 / relay2, this session).
-- This no-op keeps tern's numbering contiguous on the proj branch alone; DELETE THIS FILE
-- when merging, in favour of the real 033.
select 1;

---- create above / drop below ----

select 1;
