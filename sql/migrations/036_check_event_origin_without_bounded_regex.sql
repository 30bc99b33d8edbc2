-- The events table's origin check, without a bounded repetition (issue 18, bench backfill).
--
-- Why: events_origin_is_service_name ran origin ~ '^[a-z][a-z0-9-]{0,62}$' on every row written
-- (own appends, live copies, repairs, backfill). Postgres' regex engine expands the bounded
-- repetition {0,62} into 62 states and matched it in ~4.5 µs a row, a quarter of a copy's insert
-- (measured: plain inserts of 960-copy batches 15.6 -> 9.4 µs of CPU a row without the check).
-- The same rule, a first letter then letters, digits or '-', at most 63 characters in all, is
-- '^[a-z][a-z0-9-]*$' (~0.7 µs) and a length test: a string that matches holds ASCII only, so its
-- byte length is its length. Same name, same rule, same refusals.
--
-- NOT VALID: every stored row passed the constraint this one replaces, which states the same rule,
-- so scanning the store again (minutes on a large one, at migrate) would prove nothing new. New
-- and updated rows are checked as before.
alter table streamseal.events drop constraint events_origin_is_service_name;
alter table streamseal.events add constraint events_origin_is_service_name
    check (origin ~ '^[a-z][a-z0-9-]*$' and octet_length(origin) <= 63) not valid;

---- create above / drop below ----

alter table streamseal.events drop constraint events_origin_is_service_name;
alter table streamseal.events add constraint events_origin_is_service_name
    check (origin ~ '^[a-z][a-z0-9-]{0,62}$') not valid;
