-- Stream ids compare in byte order (collation "C") in every table that holds them, whatever the
-- database's default collation (invariants 9 and 10 across databases).
--
-- Why: the audit's stream-level pages cross between two services' databases with text bounds.
-- The origin pages its buckets in stream_id order after a cursor and answers a range
-- (covered_after, covered_through]; the consumer selects its own buckets in that range and holds
-- every row of the page to it. Both sides compared in their database's default collation. Two
-- databases need not sort alike (en_US.UTF-8 vs C, ICU vs glibc, glibc before and after 2.28 for
-- hyphens and case), and then they disagree about which streams a page covers: the consumer
-- refused the page ("stream_id 'Ab' lies outside the covered stream range ('AB', 'B']", an
-- audit failing every run) or read streams into the wrong page (phantom deficits and extras).
-- Byte order is the one order every database agrees on (and the one Go compares in). The column
-- collation carries it into every comparison with a parameter and every index on the column, so
-- the paging walks keep their index; functions add an explicit collate "C" only where both sides
-- of a comparison are parameters or function results (sql/functions/comparison.sql, tenant_folds.sql).
-- Every table holding stream ids changes together, so joins on stream_id stay on one collation
-- and keep their indexes.
--
-- Cost: no table rewrite (text to text is binary-coercible), but every index on a stream_id
-- column is rebuilt under an exclusive lock (measured: README, upgrade notes).
--
-- The views over events (sql/functions/numbered_events.sql) depend on the columns' type: they
-- (and the functions returning their row type) are dropped here and re-created by the code
-- package's install, which runs after the migrations.
drop view if exists streamseal.numbered_events, streamseal.own_events, streamseal.event_numbers cascade;

alter table streamseal.events alter column stream_id type text collate "C";
alter table streamseal.own_numbers alter column stream_id type text collate "C";
alter table streamseal.unstamped alter column stream_id type text collate "C";
alter table streamseal.stream_digests alter column stream_id type text collate "C";
alter table streamseal.repair_ledger alter column stream_id type text collate "C";
alter table streamseal.stream_closes alter column stream_id type text collate "C";
alter table streamseal.copy_closes alter column stream_id type text collate "C";
alter table streamseal.history_changes alter column stream_id type text collate "C";
alter table streamseal.projection_cursors alter column stream_id type text collate "C";
alter table streamseal.projection_held alter column stream_id type text collate "C";
alter table streamseal.projection_rebuild_requests alter column stream_id type text collate "C";
alter table streamseal.handler_failures alter column stream_id type text collate "C";
alter table streamseal.handler_parked alter column stream_id type text collate "C";
alter table streamseal.coverage_findings alter column stream_id type text collate "C";

---- create above / drop below ----

drop view if exists streamseal.numbered_events, streamseal.own_events, streamseal.event_numbers cascade;

alter table streamseal.events alter column stream_id type text collate "default";
alter table streamseal.own_numbers alter column stream_id type text collate "default";
alter table streamseal.unstamped alter column stream_id type text collate "default";
alter table streamseal.stream_digests alter column stream_id type text collate "default";
alter table streamseal.repair_ledger alter column stream_id type text collate "default";
alter table streamseal.stream_closes alter column stream_id type text collate "default";
alter table streamseal.copy_closes alter column stream_id type text collate "default";
alter table streamseal.history_changes alter column stream_id type text collate "default";
alter table streamseal.projection_cursors alter column stream_id type text collate "default";
alter table streamseal.projection_held alter column stream_id type text collate "default";
alter table streamseal.projection_rebuild_requests alter column stream_id type text collate "default";
alter table streamseal.handler_failures alter column stream_id type text collate "default";
alter table streamseal.handler_parked alter column stream_id type text collate "default";
alter table streamseal.coverage_findings alter column stream_id type text collate "default";
