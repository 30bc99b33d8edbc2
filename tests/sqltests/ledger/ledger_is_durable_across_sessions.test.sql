-- Invariant 9 and "report storms across restarts": the ledger is durable. Its state lives in
-- streamseal.repair_ledger, a permanent logged table with one row per bucket (shared by every
-- replica of the service, not one per process), and ledger_observe decides from that row alone:
-- a later call, from any session or replica after any restart, continues where the first left
-- off instead of re-reporting and re-requesting everything.
begin;
select plan(7);
select streamseal.set_service_name('ledger-durable');

create function pg_temp.observe(at timestamptz) returns table (stream_id text, report boolean, request boolean, attempts int)
language sql as $$
    select o.stream_id, o.report, o.request, o.attempts
    from streamseal.ledger_observe('ledger-durable-origin', jsonb_build_array(streamseal_test.divergent_bucket('short', 1, 3), streamseal_test.divergent_bucket('odd', 2, 2)),
                                   now_at => at) o
$$;

select results_eq(
    $$ select c.relpersistence::text, c.relkind::text,
              (select array_agg(a.attname::text collate "default" order by k.i) from unnest(i.indkey) with ordinality k(attnum, i)
               join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum)
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_index i on i.indrelid = c.oid and i.indisprimary
       where n.nspname = 'streamseal' and c.relname = 'repair_ledger' $$,
    $$ values ('p'::text, 'r'::text, array['origin', 'tenant', 'event_type', 'stream_id']) $$,
    'repair_ledger is a permanent, logged table keyed by bucket: it survives restarts and is shared by replicas');

select results_eq(
    $$ select * from pg_temp.observe('2030-01-01 00:00:00+00') $$,
    $$ values ('odd'::text, true, false, 0), ('short', true, true, 1) $$,
    'the first call reports both and requests the deficit');
select results_eq(
    $$ select stream_id, last_reported_at, attempts, next_attempt_at from streamseal.repair_ledger
       where origin = 'ledger-durable-origin' order by stream_id $$,
    $$ values ('odd'::text collate "C", '2030-01-01 00:00:00+00'::timestamptz, 0, null::timestamptz),
              ('short', '2030-01-01 00:00:00+00', 1, '2030-01-01 00:05:00+00') $$,
    'its state is in the table');
select results_eq(
    $$ select * from pg_temp.observe('2030-01-01 00:03:00+00') $$,
    $$ values ('odd'::text, false, false, 0), ('short', false, false, 1) $$,
    'a later call reads that state: inside the cooldown nothing is reported, before next_attempt_at nothing is requested');
select results_eq(
    $$ select * from pg_temp.observe('2030-01-01 00:05:00+00') $$,
    $$ values ('odd'::text, false, false, 0), ('short', false, true, 2) $$,
    'once the backoff is due the deficit is asked again as attempt 2: the count continues from the table');

-- The decision comes from the row and nothing else: take the rows away and the same call is a
-- first sighting again; put them back and it is not.
create temp table saved on commit drop as select * from streamseal.repair_ledger where origin = 'ledger-durable-origin';
delete from streamseal.repair_ledger where origin = 'ledger-durable-origin';
select results_eq(
    $$ select * from pg_temp.observe('2030-01-01 00:06:00+00') $$,
    $$ values ('odd'::text, true, false, 0), ('short', true, true, 1) $$,
    'without the rows the same call re-reports and re-requests (what a memory-only ledger does after a restart)');
delete from streamseal.repair_ledger where origin = 'ledger-durable-origin';
insert into streamseal.repair_ledger select * from saved;
select results_eq(
    $$ select * from pg_temp.observe('2030-01-01 00:06:00+00') $$,
    $$ values ('odd'::text, false, false, 0), ('short', false, false, 2) $$,
    'with the rows back it stays quiet: the table is the ledger''s whole memory');

select * from finish();
rollback;
