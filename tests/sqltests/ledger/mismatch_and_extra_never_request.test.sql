-- Invariants 9 and 10: only a deficit can converge under redelivery. An identity mismatch (equal
-- counts, other ids: redelivery re-ships what is held and the fold never moves) and a local extra
-- (more here: asking for more fixes nothing, and local history is never deleted on a remote's
-- say-so) are never requested, however long they last, through signature changes too, and a
-- caller cannot relabel one as a deficit. They keep reporting at the cooldown.
begin;
select plan(6);
select streamseal.set_service_name('ledger-alarms');

-- Observe both every 5 minutes for 24 hours; their folds move (a new signature) at minutes 330,
-- 690, 1050 and 1410.
create temp table cycles (minute int, stream_id text, reason text, report boolean, request boolean, attempts int, settled boolean)
    on commit drop;
do $$
declare
    m int;
begin
    for m in 0 .. 1440 by 5 loop
        insert into cycles
        select m, o.stream_id, o.reason, o.report, o.request, o.attempts, o.settled
        from streamseal.ledger_observe('ledger-alarms-origin',
            jsonb_build_array(streamseal_test.divergent_bucket('mismatched', 2, 2, salt => (m + 30) / 360), streamseal_test.divergent_bucket('surplus', 3, 2, salt => (m + 30) / 360)),
            max_attempts => 1, now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute') o;
    end loop;
end
$$;

select is_empty(
    $$ select * from cycles where request or attempts <> 0 or settled $$,
    'in 289 cycles neither the mismatch nor the extra was ever requested, counted an attempt or settled');
select results_eq(
    $$ select stream_id, reason, count(*)::int, (count(*) filter (where minute in (330, 690, 1050, 1410)))::int
       from cycles where report group by 1, 2 order by 1 $$,
    $$ values ('mismatched'::text, 'identity_mismatch'::text, 25, 4), ('surplus', 'local_extra', 25, 4) $$,
    'both keep reporting: at once on each signature change and hourly in between (25 reports in 24 hours)');
select results_eq(
    $$ select stream_id, attempts, last_attempt_at, next_attempt_at, exhausted_at
       from streamseal.repair_ledger where origin = 'ledger-alarms-origin' order by stream_id $$,
    $$ values ('mismatched'::text collate "C", 0, null::timestamptz, null::timestamptz, null::timestamptz),
              ('surplus', 0, null, null, null) $$,
    'their rows hold no attempt, no next attempt and no exhaustion');

-- A caller cannot turn an alarm into a request by naming it a deficit.
select throws_ok(
    $$ select * from streamseal.ledger_observe('ledger-alarms-origin',
           jsonb_build_array(streamseal_test.divergent_bucket('surplus', 3, 2) || '{"reason": "deficit"}')) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ledger-alarms-origin": reason ''deficit'' does not match the folds local (1000, 2000, 3) and origin (3000, 4000, 2): expected ''local_extra''',
    'a surplus labelled a deficit is refused');
select throws_ok(
    $$ select * from streamseal.ledger_observe('ledger-alarms-origin',
           jsonb_build_array(streamseal_test.divergent_bucket('mismatched', 2, 2) || '{"reason": "deficit"}')) $$,
    '22023', 'ledger_observe: bucket #1 of origin "ledger-alarms-origin": reason ''deficit'' does not match the folds local (1000, 2000, 2) and origin (3000, 4000, 2): expected ''identity_mismatch''',
    'a mismatch labelled a deficit is refused');

-- The same bucket is requested the moment its folds show a deficit (repair can now converge).
select results_eq(
    $$ select reason, report, request, attempts from streamseal.ledger_observe('ledger-alarms-origin',
           jsonb_build_array(streamseal_test.divergent_bucket('mismatched', 1, 2)), now_at => '2030-01-02 01:00:00+00') $$,
    $$ values ('deficit'::text, true, true, 1) $$,
    'once the folds show a deficit the bucket is requested like any deficit');

select * from finish();
rollback;
