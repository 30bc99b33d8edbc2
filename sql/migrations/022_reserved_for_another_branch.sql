-- Reserved: migration 022 belongs to another helper's branch (issue 14/15 work merged in parallel).
-- This no-op keeps tern's numbering contiguous on the ephemeral branch alone; DELETE THIS FILE
-- when merging, in favour of the real 022.
select 1;

---- create above / drop below ----

select 1;
