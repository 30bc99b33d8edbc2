-- Invariant 8 (bounded cost): ledger_unrequest and ledger_heal reach a call's buckets by one
-- primary-key probe each, however large the origin's ledger. As joins, on a ledger not analyzed
-- since it grew the planner read all of the origin's rows (heal) and rescanned the bucket list
-- for each of them (unrequest: 4.5 s for 500 buckets against 50000 rows instead of 3 ms).
-- Rows read come from streamseal_test.rows_read.
begin;
select plan(6);
select streamseal.set_service_name('ledger-probe');

-- 3000 ledgered deficits of one origin, as ledger_observe leaves them after a request.
insert into streamseal.repair_ledger (origin, tenant, event_type, stream_id, reason, local_x0, local_x1, local_n,
                                      origin_x0, origin_x1, origin_n, first_seen_at, last_reported_at, attempts,
                                      last_attempt_at, next_attempt_at)
select 'ledger-probe-origin', 't1', 'probe.type', 's' || lpad(i::text, 4, '0'), 'deficit', 1, 2, 1, 3, 4, 2,
       '2030-01-01 00:00:00+00', '2030-01-01 00:00:00+00', 1, '2030-01-01 00:00:00+00', '2030-01-01 00:05:00+00'
from generate_series(1, 3000) i;

create temp table read_before on commit drop as select streamseal_test.rows_read('repair_ledger') as n;
select is(
    streamseal.ledger_unrequest('ledger-probe-origin',
        '[{"tenant":"t1","event_type":"probe.type","stream_id":"s0007"},
          {"tenant":"t1","event_type":"probe.type","stream_id":"s2999"},
          {"tenant":"t1","event_type":"probe.type","stream_id":"nowhere"}]', '2030-01-01 00:01:00+00'),
    2, 'fixture: two ledgered buckets give their attempt back');
select cmp_ok((streamseal_test.rows_read('repair_ledger') - (select n from read_before))::int, '<=', 4,
    'ledger_unrequest read the buckets it was given, not the origin''s ledger');

update read_before set n = streamseal_test.rows_read('repair_ledger');
select results_eq(
    $$ select stream_id from streamseal.ledger_heal('ledger-probe-origin',
           '[{"tenant":"t1","event_type":"probe.type","stream_id":"s0008"},
             {"tenant":"t1","event_type":"probe.type","stream_id":"s0008"},
             {"tenant":"t1","event_type":"probe.type","stream_id":"nowhere"}]', '2030-01-01 00:02:00+00') $$,
    $$ values ('s0008') $$,
    'fixture: the ledgered bucket heals once, the unknown one returns nothing');
select cmp_ok((streamseal_test.rows_read('repair_ledger') - (select n from read_before))::int, '<=', 4,
    'ledger_heal read the buckets it was given, not the origin''s ledger');

select is((select count(*)::int from streamseal.repair_ledger where origin = 'ledger-probe-origin'), 2999,
    'only the healed row is gone');
select results_eq(
    $$ select stream_id, attempts from streamseal.repair_ledger
       where origin = 'ledger-probe-origin' and stream_id in ('s0007', 's2999', 's0009') order by stream_id $$,
    $$ values ('s0007' collate "C", 0), ('s0009', 1), ('s2999', 0) $$,
    'only the unrequested rows gave their attempt back');

select * from finish();
rollback;
