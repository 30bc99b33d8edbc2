-- Invariants 4, 6 and 10: the application role writes nothing directly. Events go in only through
-- append and ingest (which validate and keep identity), and the digests, lanes, seals and repair
-- ledger only ever move through the functions that own their rules.
begin;
select plan(12);
select streamseal.set_service_name('privileges-tables');
create role privileges_tables_app nologin;
grant streamseal_application to privileges_tables_app;
set local role privileges_tables_app;

select throws_ok(
    $$ insert into streamseal.events (event_id, origin, tenant, stream_id, stream_version, event_type, payload)
       values ('00000000-0000-0000-0000-000000000001', 'privileges-tables', 't1', 'pt-s1', 1, 'thing.happened', '\x7b7d') $$,
    '42501', 'permission denied for table events', 'a plain INSERT into events refuses the application role');
select throws_ok(
    $$ update streamseal.events set payload = '\x00' $$,
    '42501', 'permission denied for table events', 'an UPDATE of events refuses the application role');
select throws_ok(
    $$ delete from streamseal.events $$,
    '42501', 'permission denied for table events', 'a DELETE from events refuses the application role');
select throws_ok(
    $$ insert into streamseal.stream_digests (origin, tenant, event_type, stream_id, x0, x1, n)
       values ('privileges-tables', 't1', 'thing.happened', 'pt-s1', 1, 2, 1) $$,
    '42501', 'permission denied for table stream_digests', 'an INSERT into stream_digests refuses the application role');
select throws_ok(
    $$ update streamseal.stream_digests set n = n + 1 $$,
    '42501', 'permission denied for table stream_digests', 'an UPDATE of stream_digests refuses the application role');
select throws_ok(
    $$ insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq)
       values ('privileges-tables-src', 't1', 'thing.happened', 9, 0, 9) $$,
    '42501', 'permission denied for table lanes', 'an INSERT into lanes refuses the application role');
select throws_ok(
    $$ update streamseal.lanes set floor = floor + 1 $$,
    '42501', 'permission denied for table lanes', 'an UPDATE of lanes refuses the application role');
select throws_ok(
    $$ insert into streamseal.seals (origin, sealed_through) values ('privileges-tables-src', 100) $$,
    '42501', 'permission denied for table seals', 'an INSERT into seals refuses the application role');
select throws_ok(
    $$ update streamseal.seals set sealed_through = sealed_through + 1 $$,
    '42501', 'permission denied for table seals', 'an UPDATE of seals refuses the application role');
select throws_ok(
    $$ insert into streamseal.repair_ledger (origin, tenant, event_type, stream_id, reason, local_x0, local_x1, local_n,
                                             origin_x0, origin_x1, origin_n, first_seen_at, last_reported_at)
       values ('privileges-tables-src', 't1', 'thing.happened', 'pt-s1', 'deficit', 1, 2, 1, 3, 4, 2, now(), now()) $$,
    '42501', 'permission denied for table repair_ledger', 'an INSERT into repair_ledger refuses the application role');
select throws_ok(
    $$ update streamseal.repair_ledger set attempts = 0 $$,
    '42501', 'permission denied for table repair_ledger', 'an UPDATE of repair_ledger refuses the application role');
select throws_ok(
    $$ delete from streamseal.repair_ledger $$,
    '42501', 'permission denied for table repair_ledger', 'a DELETE from repair_ledger (a silent heal) refuses the application role');
reset role;

select * from finish();
rollback;
