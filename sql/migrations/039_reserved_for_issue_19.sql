-- Placeholder (branch cert only): tern needs contiguous numbers and 039 is issue 19's (helper
-- proj3). This file changes nothing. At merge, delete it in favour of proj3's 039.
select 1;

---- create above / drop below ----

select 1;
