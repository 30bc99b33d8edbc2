-- Reserved: migration 035 belongs to another helper's branch (write, feedcert or bf4, this session).
-- This no-op keeps tern's numbering contiguous on the proj2 branch alone; DELETE THIS FILE
-- when merging, in favour of the real 035.
select 1;

---- create above / drop below ----

select 1;
