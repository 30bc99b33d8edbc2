-- Invariant 9: an unchanged divergence is not news. Observed every 5 minutes (the audit cadence
-- is irrelevant), the same signature is reported once per cooldown (default 60 minutes), never
-- on the cycles between, and never goes silent; last_reported_at moves only when it reports.
begin;
select plan(5);
select streamseal.set_service_name('ledger-cooldown');

-- Observe a mismatch and a deficit every 5 minutes for 3 hours, one call per cycle.
create temp table cycles (minute int, stream_id text, report boolean, request boolean) on commit drop;
do $$
declare
    m int;
begin
    for m in 0 .. 180 by 5 loop
        insert into cycles
        select m, o.stream_id, o.report, o.request
        from streamseal.ledger_observe('ledger-cooldown-origin',
            jsonb_build_array(streamseal_test.divergent_bucket('mismatched', 2, 2), streamseal_test.divergent_bucket('short', 1, 2)),
            now_at => '2030-01-01 00:00:00+00'::timestamptz + m * interval '1 minute') o;
    end loop;
end
$$;

select results_eq(
    $$ select minute from cycles where stream_id = 'mismatched' and report order by minute $$,
    $$ values (0), (60), (120), (180) $$,
    'the unchanged mismatch reports at first sighting and then once per 60-minute cooldown');
select results_eq(
    $$ select minute from cycles where stream_id = 'short' and report order by minute $$,
    $$ values (0), (60), (120), (180) $$,
    'an unchanged deficit reports on the same cooldown, whatever its requests do');
select is(
    (select count(*)::int from cycles where stream_id = 'mismatched' and not report), 33,
    'the 33 cycles between cooldowns stay quiet');
select is(
    (select last_reported_at from streamseal.repair_ledger where origin = 'ledger-cooldown-origin' and stream_id = 'mismatched'),
    '2030-01-01 03:00:00+00'::timestamptz,
    'last_reported_at is the last report, not the last observation');

-- A custom cooldown: one 10 minutes after the last report (03:00) is not yet due at 03:09 and due at 03:10.
select results_eq(
    $$ select o.report
       from unnest(array['2030-01-01 03:09:00+00', '2030-01-01 03:10:00+00']::timestamptz[]) with ordinality t(at, i)
       cross join lateral streamseal.ledger_observe('ledger-cooldown-origin', jsonb_build_array(streamseal_test.divergent_bucket('mismatched', 2, 2)),
                                                    cooldown => interval '10 minutes', now_at => t.at) o
       order by t.i $$,
    $$ values (false), (true) $$,
    'the cooldown is the caller''s: due exactly when the last report is cooldown old');

select * from finish();
rollback;
